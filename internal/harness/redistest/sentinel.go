package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// MasterSet is the name under which the Sentinels of StartSentinel monitor
// their primary: rueidis.SentinelOption.MasterSet.
const MasterSet = "mymaster"

// The Sentinels' timings: short, so that a test sees a failover within a
// few seconds, long enough that a loaded 2-core machine under -race does not
// fail over by mistake.
const (
	// downAfter is down-after-milliseconds: how long a primary may leave a
	// PING unanswered before a Sentinel thinks it down. Not less: after a
	// switch a Sentinel times the new primary's first PING from the switch,
	// but may wait up to its ping period (1s) before connecting to it, and
	// with 500ms it found each new primary down in turn (a storm of
	// failovers, one every 0.6s).
	downAfter = 1500 * time.Millisecond
	// failoverTimeout bounds each step of a failover; a failover that
	// fails is tried again after twice as long.
	failoverTimeout = 3000 * time.Millisecond
)

// Sentinel is a Redis primary, two replicas and three Sentinels watching them
// (quorum 2), on loopback, owned by a test: what rueidis' SentinelOption
// connects to. Which node is the primary changes with each failover: ask
// Primary.
type Sentinel struct {
	tb testing.TB
	// Nodes are the data nodes, the primary started first.
	Nodes []*Server
	// Sentinels are the redis-server --sentinel processes.
	Sentinels []*Server

	// switches is how many +switch-master each Sentinel had announced when
	// the last fault began.
	switches []int
	// rest is where the replicas and the Sentinels run (StartSentinelWith).
	rest Config
}

// StartSentinel starts a primary, two replicas of it and three Sentinels that
// monitor it, waits until the replicas are in sync and acknowledge writes and
// every Sentinel knows the other two and both replicas, and stops them all
// when the test ends; if the test failed, it logs the Sentinels' logs first.
// It fails the test if the deployment is not ready in 30s.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	return StartSentinelWith(tb, Config{}, Config{})
}

// StartSentinelWith is StartSentinel with the first primary run as primary
// says and the replicas and Sentinels as rest says (their Args are not
// used): a primary in a network namespace of its own can be cut from the
// others.
func StartSentinelWith(tb testing.TB, primary, rest Config) *Sentinel {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: Sentinel tests run without it")
	}
	s := &Sentinel{tb: tb, rest: rest}
	primary.Args = nodeArgs(nil, primary)
	p := StartWith(tb, primary)
	s.Nodes = append(s.Nodes, p)
	for range 2 {
		s.Nodes = append(s.Nodes, StartWith(tb, Config{Netns: rest.Netns, Host: rest.Host, Env: rest.Env, Args: nodeArgs(p, rest)}))
	}
	ports, ids := sentinelIDs(tb, 3)
	for i := range ports {
		s.Sentinels = append(s.Sentinels, s.startSentinel(i, ports, ids))
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(s.Log())
		}
	})
	s.AwaitReady(30 * time.Second)
	return s
}

// sentinelIDs picks n distinct free ports and n random run IDs for the
// Sentinels.
func sentinelIDs(tb testing.TB, n int) (ports []int, ids []string) {
	tb.Helper()
	ports = make([]int, n)
	ids = make([]string, n)
	for i := range ports {
		for ports[i] == 0 || slices.Contains(ports[:i], ports[i]) {
			p, err := FreePort()
			if err != nil {
				tb.Fatalf("redistest: sentinel port: %v", err)
			}
			ports[i] = p
		}
		id := make([]byte, 20)
		_, _ = rand.Read(id)
		ids[i] = hex.EncodeToString(id)
	}
	return ports, ids
}

// sentinelConf is the config of Sentinel i of those at ports with ids,
// monitoring s's primary. The Sentinels are told of each other and of the
// replicas, as a Sentinel's rewritten config would: otherwise they find each
// other by hello messages every 2s, and the replicas at the primary's next
// INFO.
func (s *Sentinel) sentinelConf(i int, ports []int, ids []string) string {
	var conf strings.Builder
	fmt.Fprintf(&conf, "sentinel myid %s\n", ids[i])
	conf.WriteString("sentinel resolve-hostnames no\n")
	fmt.Fprintf(&conf, "sentinel monitor %s %s %d 2\n", MasterSet, s.Nodes[0].hostname(), s.Nodes[0].Port())
	fmt.Fprintf(&conf, "sentinel down-after-milliseconds %s %d\n", MasterSet, downAfter.Milliseconds())
	fmt.Fprintf(&conf, "sentinel failover-timeout %s %d\n", MasterSet, failoverTimeout.Milliseconds())
	fmt.Fprintf(&conf, "sentinel parallel-syncs %s 2\n", MasterSet)
	for _, r := range s.Nodes[1:] {
		fmt.Fprintf(&conf, "sentinel known-replica %s %s %d\n", MasterSet, r.hostname(), r.Port())
	}
	for j := range ports {
		if j != i {
			fmt.Fprintf(&conf, "sentinel known-sentinel %s %s %d %s\n", MasterSet, s.sentinelHost(), ports[j], ids[j])
		}
	}
	return conf.String()
}

// startSentinel writes the config of Sentinel i of those at ports with ids
// and starts it, to be stopped when the test ends.
func (s *Sentinel) startSentinel(i int, ports []int, ids []string) *Server {
	tb := s.tb
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(s.sentinelConf(i, ports, ids)), 0o644); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	// notice: the log then tells every step of a failover.
	sn := &Server{tb: tb, port: ports[i], conf: path, dir: dir, args: []string{"--sentinel", "--loglevel", "notice"},
		netns: s.rest.Netns, host: s.rest.Host, env: s.rest.Env}
	if err := sn.start(); err != nil {
		tb.Fatalf("redistest: sentinel %d: %v", i, err)
	}
	tb.Cleanup(sn.Stop)
	return sn
}

// sentinelHost is the address the Sentinels listen on and announce.
func (s *Sentinel) sentinelHost() string {
	if s.rest.Host != "" {
		return s.rest.Host
	}
	return "127.0.0.1"
}

// nodeArgs are the arguments of a data node run as at says, a replica of
// primary unless nil.
func nodeArgs(primary *Server, at Config) []string {
	// Without the default 5s wait for more replicas before a diskless
	// sync: any node may be the primary a replica syncs with.
	args := []string{"--repl-diskless-sync-delay", "0"}
	if at.Host != "" {
		// The address the others reach it at, not the one its
		// primary sees its connection come from.
		args = append(args, "--replica-announce-ip", at.Host)
	}
	if primary != nil {
		args = append(args, "--replicaof", primary.hostname(), strconv.Itoa(primary.Port()))
	}
	return args
}

// Addrs are the Sentinels' host:port.
func (s *Sentinel) Addrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr()
	}
	return addrs
}

// Option is a rueidis option that reaches the primary through the Sentinels,
// for leasehold.Open, with the short timeouts of Server.Option. It leaves
// SentinelOption.TopologyRefreshInterval at its default (none): the client
// follows the Sentinels' +switch-master messages alone, as most users' do.
func (s *Sentinel) Option() rueidis.ClientOption {
	opt := s.Sentinels[0].Option()
	opt.InitAddress = s.Addrs()
	opt.Sentinel = rueidis.SentinelOption{MasterSet: MasterSet, Dialer: opt.Dialer}
	return opt
}

// node is the data node at addr, nil if none.
func (s *Sentinel) node(addr string) *Server {
	for _, n := range s.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// reported is the primary a Sentinel reports (SENTINEL
// get-master-addr-by-name), "" if it does not answer.
func reported(sn *Server) string {
	hp, err := sn.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterSet).AsStrSlice()
	if err != nil || len(hp) != 2 {
		return ""
	}
	return net.JoinHostPort(hp[0], hp[1])
}

// Primary is the node the first Sentinel that answers reports as the
// primary. It fails the test if none answers, or names a node it does not
// know.
func (s *Sentinel) Primary() *Server {
	s.tb.Helper()
	for _, sn := range s.Sentinels {
		if addr := reported(sn); addr != "" {
			if n := s.node(addr); n != nil {
				return n
			}
			s.tb.Fatalf("redistest: sentinel %s reports an unknown primary %s", sn.Addr(), addr)
		}
	}
	s.tb.Fatalf("redistest: no sentinel reports a primary")
	return nil
}

// Replicas are the data nodes other than the primary, live or not.
func (s *Sentinel) Replicas() []*Server {
	s.tb.Helper()
	p := s.Primary()
	var rs []*Server
	for _, n := range s.Nodes {
		if n != p {
			rs = append(rs, n)
		}
	}
	return rs
}

// Failover asks the first Sentinel for a failover (SENTINEL FAILOVER), which
// it starts at once, without the others' agreement, and returns the primary
// it replaces. That one keeps running, and taking writes, until the Sentinels
// make it a replica of the new primary: 8s after the switch at the soonest
// (at their next look at it, which may be 10s later).
func (s *Sentinel) Failover() (old *Server) {
	s.tb.Helper()
	old = s.Primary()
	s.snapshot()
	if err := s.Sentinels[0].Do("SENTINEL", "FAILOVER", MasterSet).Error(); err != nil {
		s.tb.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
	}
	return old
}

// KillPrimary kills the primary with SIGKILL (kill -9) and returns it.
func (s *Sentinel) KillPrimary() (old *Server) {
	s.tb.Helper()
	old = s.Primary()
	s.snapshot()
	old.Kill()
	return old
}

// snapshot counts the +switch-master each Sentinel has announced so far.
func (s *Sentinel) snapshot() {
	s.switches = make([]int, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		s.switches[i] = announced(sn)
	}
}

// announced is how many times a Sentinel has announced +switch-master, the
// message on which clients move to a new primary, as its log tells.
func announced(sn *Server) int {
	out, _ := os.ReadFile(filepath.Join(sn.dir, "redis.log"))
	return strings.Count(string(out), "+switch-master")
}

// AwaitPrimary waits, after Failover or KillPrimary, until every Sentinel
// has announced +switch-master (so every client subscribed to one has been
// told) and reports the same primary, another node than old, and that node
// takes a write. It returns the new primary, and fails the test after d.
func (s *Sentinel) AwaitPrimary(old *Server, d time.Duration) *Server {
	s.tb.Helper()
	var last string
	deadline := time.Now().Add(d)
	for {
		n, why := s.promoted(old)
		if n != nil {
			return n
		}
		last = why
		if time.Now().After(deadline) {
			s.tb.Fatalf("redistest: no new primary after %v: %s", d, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// promoted is the new primary if the Sentinels agree on one other than old
// and it takes writes; otherwise nil and why not.
func (s *Sentinel) promoted(old *Server) (*Server, string) {
	addr := ""
	for i, sn := range s.Sentinels {
		if old != nil && i < len(s.switches) && announced(sn) <= s.switches[i] {
			return nil, "sentinel " + sn.Addr() + " has not announced +switch-master"
		}
		a := reported(sn)
		switch {
		case a == "":
			return nil, "sentinel " + sn.Addr() + " does not answer"
		case addr != "" && a != addr:
			return nil, fmt.Sprintf("sentinels report %s and %s", addr, a)
		}
		addr = a
	}
	if old != nil && addr == old.Addr() {
		return nil, "the sentinels still report " + addr
	}
	n := s.node(addr)
	if n == nil {
		return nil, "unknown primary " + addr
	}
	if err := n.Do("SET", "redistest:sentinel", "1").Error(); err != nil {
		return nil, fmt.Sprintf("%s refuses a write: %v", addr, err)
	}
	return n, ""
}

// Rejoin restarts a killed node, empty, as a replica of the current primary,
// as an operator brings a failed node back.
func (s *Sentinel) Rejoin(n *Server) {
	s.tb.Helper()
	n.args = nodeArgs(s.Primary(), Config{Host: n.host})
	n.Restart()
}

// AwaitReady waits until the deployment could fail over again, with no write
// of the primary's missing on any replica: every Sentinel reports the same
// primary, knows the two other Sentinels and sees no failover in progress,
// and every running replica is linked to that primary, in sync and
// acknowledging writes (WAIT). It fails the test after d.
func (s *Sentinel) AwaitReady(d time.Duration) {
	s.tb.Helper()
	var last string
	deadline := time.Now().Add(d)
	for {
		why := s.ready()
		if why == "" {
			return
		}
		last = why
		if time.Now().After(deadline) {
			s.tb.Fatalf("redistest: sentinel deployment not ready after %v: %s", d, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ready says why the deployment is not ready, "" if it is.
func (s *Sentinel) ready() string {
	p, why := s.promoted(nil)
	if p == nil {
		return why
	}
	var live []*Server
	for _, n := range s.Nodes {
		if n != p && n.running() {
			live = append(live, n)
		}
	}
	for _, sn := range s.Sentinels {
		m, err := sn.Do("SENTINEL", "MASTER", MasterSet).AsStrMap()
		if err != nil {
			return fmt.Sprintf("SENTINEL MASTER on %s: %v", sn.Addr(), err)
		}
		if m["flags"] != "master" || m["num-other-sentinels"] != "2" {
			return fmt.Sprintf("sentinel %s: flags %s, %s other sentinels", sn.Addr(), m["flags"], m["num-other-sentinels"])
		}
		rs, err := sn.Do("SENTINEL", "REPLICAS", MasterSet).ToArray()
		if err != nil {
			return fmt.Sprintf("SENTINEL REPLICAS on %s: %v", sn.Addr(), err)
		}
		good := 0
		for _, r := range rs {
			m, _ := r.AsStrMap()
			if m["flags"] == "slave" && m["master-link-status"] == "ok" && m["master-port"] == strconv.Itoa(p.Port()) {
				good++
			}
		}
		if good < len(live) {
			return fmt.Sprintf("sentinel %s sees %d replicas in sync with %s, not %d", sn.Addr(), good, p.Addr(), len(live))
		}
	}
	// After a sync the primary asks a replica for acknowledgements only once
	// the replica has sent its first (once a second): until then a WAIT
	// lasts up to a second. Wait for that here, not in the tests.
	if n := acked(p, len(live)); n < int64(len(live)) {
		return fmt.Sprintf("%d of %d replicas acknowledge %s's writes", n, len(live), p.Addr())
	}
	return ""
}

// running reports whether the node's process runs (it was not killed, or
// was restarted).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// acked is how many of n replicas acknowledge a write on p within 100ms.
func acked(p *Server, n int) int64 {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true, DisableRetry: true, ForceSingleClient: true})
	if err != nil {
		return 0
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// One connection: WAIT counts the writes of its own.
	var acks int64
	_ = c.Dedicated(func(dc rueidis.DedicatedClient) error {
		res := dc.DoMulti(ctx, dc.B().Set().Key("redistest:sentinel").Value("1").Build(), dc.B().Wait().Numreplicas(int64(n)).Timeout(100).Build())
		acks, _ = res[1].AsInt64()
		return nil
	})
	return acks
}

// Log is the Sentinels' logs, each under its address: every step of the
// failovers so far, for a test to show when it fails.
func (s *Sentinel) Log() string {
	var b strings.Builder
	for _, sn := range s.Sentinels {
		out, _ := os.ReadFile(filepath.Join(sn.dir, "redis.log"))
		fmt.Fprintf(&b, "sentinel %s:\n%s", sn.Addr(), out)
	}
	return b.String()
}
