package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// netnsPrefix starts the name of every network namespace the suite makes,
// NETNSPREFIX-SLOT-PID: SLOT its veth pair's number, PID the test process
// that made it, so that a sweep can tell a stale one (its process gone)
// from one in use by another run.
const netnsPrefix = "lhchaos"

// netnsEnv, set to 1 (as CI does), makes a missing ip, nft or root fail the
// tests of network partitions instead of skipping them.
const netnsEnv = "LEASEHOLD_CHAOS_NETNS"

// netns is a network namespace of the test's own, joined to the test's by a
// veth pair: a /30 whose first address is the test's end (Host) and whose
// second the namespace's (Inside). Partition drops every packet on the pair,
// both ways, inside the namespace (nftables): no RST, no ICMP, the black hole
// of a network that fails between two hosts. Nothing outside the namespace
// is changed but the veth's end and its /30 route, gone with the namespace.
type netns struct {
	t      *testing.T
	name   string
	veth   string // the test's end; the namespace's is veth + "n"
	Host   string // the test's end's address
	Inside string // the namespace's end's address
}

// newNetns makes a network namespace, deleted when the test ends. It skips
// the test without root, ip or nft, unless LEASEHOLD_CHAOS_NETNS=1.
func newNetns(t *testing.T) *netns {
	t.Helper()
	canNetns(t)
	sweepOnce.Do(func() { sweepNetns(t) })
	// The veth's name is the slot's lock: ip link add fails for a name in
	// use, by this run or another. Its other end is made in the namespace,
	// so a namespace swept takes its veth pair with it.
	for slot := 0; slot < 1<<14; slot++ {
		n := &netns{t: t, name: fmt.Sprintf("%s-%d-%d", netnsPrefix, slot, os.Getpid()), veth: "lhc" + strconv.Itoa(slot),
			Host:   fmt.Sprintf("10.213.%d.%d", slot/64, slot%64*4+1),
			Inside: fmt.Sprintf("10.213.%d.%d", slot/64, slot%64*4+2)}
		if out, err := run("ip", "netns", "add", n.name); err != nil {
			if strings.Contains(string(out), "File exists") {
				continue // another test of this process is making it
			}
			t.Fatalf("ip netns add %s: %v\n%s", n.name, err, out)
		}
		if _, err := run("ip", "link", "add", n.veth, "type", "veth", "peer", "name", n.veth+"n", "netns", n.name); err != nil {
			_, _ = run("ip", "netns", "delete", n.name)
			continue
		}
		t.Cleanup(n.delete)
		n.setup()
		return n
	}
	t.Fatal("no free veth slot lhc0..lhc16383")
	return nil
}

// setup gives the veth pair its addresses and brings it up, and the
// namespace's loopback.
func (n *netns) setup() {
	n.t.Helper()
	for _, cmd := range [][]string{
		{"ip", "addr", "add", n.Host + "/30", "dev", n.veth},
		{"ip", "link", "set", n.veth, "up"},
		{"ip", "-n", n.name, "addr", "add", n.Inside + "/30", "dev", n.veth + "n"},
		{"ip", "-n", n.name, "link", "set", n.veth + "n", "up"},
		{"ip", "-n", n.name, "link", "set", "lo", "up"},
	} {
		if out, err := run(cmd...); err != nil {
			n.t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
}

// delete deletes the namespace, which deletes the veth pair with it.
func (n *netns) delete() {
	if out, err := run("ip", "netns", "delete", n.name); err != nil {
		n.t.Errorf("ip netns delete %s: %v\n%s", n.name, err, out)
	}
}

// Partition drops every packet on the veth pair, both ways, from now on.
func (n *netns) Partition() {
	n.t.Helper()
	rules := fmt.Sprintf(`table inet %[1]s {
	chain in { type filter hook input priority -300; policy accept; iifname "%[2]s" drop; }
	chain out { type filter hook output priority -300; policy accept; oifname "%[2]s" drop; }
}`, netnsPrefix, n.veth+"n")
	if out, err := n.nft(rules); err != nil {
		n.t.Fatalf("nft: %v\n%s", err, out)
	}
}

// Heal lets packets through again.
func (n *netns) Heal() {
	n.t.Helper()
	if out, err := run("ip", "netns", "exec", n.name, "nft", "delete", "table", "inet", netnsPrefix); err != nil {
		n.t.Fatalf("nft: %v\n%s", err, out)
	}
}

// nft loads rules into the namespace's nftables.
func (n *netns) nft(rules string) ([]byte, error) {
	cmd := exec.Command("ip", "netns", "exec", n.name, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	return cmd.CombinedOutput()
}

// Command is name run in the namespace; the process keeps its pid (ip netns
// exec execs it).
func (n *netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name, name}, args...)...)
}

func run(args ...string) ([]byte, error) {
	return exec.Command(args[0], args[1:]...).CombinedOutput()
}

// canNetns skips (or, with LEASEHOLD_CHAOS_NETNS=1, fails) the test unless it
// can make namespaces and partition them.
func canNetns(t *testing.T) {
	t.Helper()
	why := noNetns()
	if why == "" {
		return
	}
	if os.Getenv(netnsEnv) == "1" {
		t.Fatal(why)
	}
	t.Skipf("%s; %s=1 makes this a failure", why, netnsEnv)
}

// maybeNetns is newNetns for a test that has other faults to inject: where
// namespaces cannot be made, it logs why and returns nil (with
// LEASEHOLD_CHAOS_NETNS=1, it fails the test).
func maybeNetns(t *testing.T) *netns {
	t.Helper()
	if why := noNetns(); why != "" && os.Getenv(netnsEnv) != "1" {
		t.Logf("no network partition: %s; %s=1 makes this a failure", why, netnsEnv)
		return nil
	}
	return newNetns(t)
}

// noNetns says why network namespaces cannot be made and partitioned here,
// or "".
func noNetns() string {
	switch {
	case os.Geteuid() != 0:
		return "network namespaces need root"
	case !found("ip"):
		return "no ip (apt-get install iproute2)"
	case !found("nft"):
		return "no nft (apt-get install nftables)"
	}
	return ""
}

func found(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

var sweepOnce sync.Once

// sweepNetns deletes the namespaces of test processes that are gone (killed
// before their cleanup ran): they hold veth slots and addresses. Those of
// live processes, this run's or another's, stay.
func sweepNetns(t *testing.T) {
	out, err := run("ip", "netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		f := strings.Split(name, "-")
		if len(f) != 3 || f[0] != netnsPrefix {
			continue
		}
		if _, err := os.Stat("/proc/" + f[2]); err == nil {
			continue // its process lives
		}
		t.Logf("deleting the stale network namespace %s", name)
		_, _ = run("ip", "netns", "delete", name)
	}
}
