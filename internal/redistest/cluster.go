package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Cluster is a Redis Cluster of primaries (no replicas) on loopback, owned by
// a test: each node a redis-server started with --cluster-enabled yes, the
// slots spread over them by redis-cli --cluster create.
type Cluster struct {
	tb    testing.TB
	Nodes []*Server
}

// CLI is the redis-cli the harness runs: redis-cli from PATH, or
// $LEASEHOLD_REDIS_CLI.
func CLI() string {
	if b := os.Getenv("LEASEHOLD_REDIS_CLI"); b != "" {
		return b
	}
	return "redis-cli"
}

// StartCluster starts n primaries (at least 3, as redis-cli requires), joins
// them into one cluster covering all 16384 slots, waits until every node
// reports cluster_state:ok and agrees on the slots, and stops them when the
// test ends. It fails the test if the cluster does not form in 30s.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 3 {
		tb.Fatalf("redistest: a cluster needs at least 3 primaries, not %d", n)
	}
	if _, err := exec.LookPath(CLI()); err != nil {
		tb.Fatalf("redistest: %s not found (it comes with redis-server): %v", CLI(), err)
	}
	c := &Cluster{tb: tb}
	for i := 0; i < n; i++ {
		s := &Server{tb: tb, dir: tb.TempDir()}
		if err := s.launchClustered(); err != nil {
			tb.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, CLI(), args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: %s %s: %v\n%s", CLI(), strings.Join(args, " "), err, out)
	}
	if err := c.waitReady(ctx); err != nil {
		tb.Fatalf("redistest: cluster: %v", err)
	}
	return c
}

// launchClustered starts the node on a free port with a free cluster bus
// port (--cluster-port, Redis 7): the default bus port, port+10000, may be
// taken or out of range.
func (s *Server) launchClustered() error {
	var err error
	for try := 0; try < 5; try++ {
		var bus int
		if s.port, err = FreePort(); err != nil {
			continue
		}
		if bus, err = FreePort(); err != nil || bus == s.port {
			continue
		}
		s.args = []string{
			"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
		}
		if err = s.start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("start redis-server: %w", err)
}

// waitReady polls every node until each says cluster_state:ok and maps every
// slot to the same number of nodes: a client that reads the slots of any
// node then routes every key right.
func (c *Cluster) waitReady(ctx context.Context) error {
	var last string
	for {
		ok := true
		for _, s := range c.Nodes {
			info, err := s.Do("CLUSTER", "INFO").ToString()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok, last = false, fmt.Sprintf("%s: %q %v", s.Addr(), firstLine(info), err)
				break
			}
			slots, err := s.Do("CLUSTER", "SLOTS").ToArray()
			if err != nil || len(slots) != len(c.Nodes) {
				ok, last = false, fmt.Sprintf("%s: %d slot ranges, want %d (%v)", s.Addr(), len(slots), len(c.Nodes), err)
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %s", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Option is a rueidis option listing every node, for leasehold.Open: rueidis
// reads the slot map and runs in cluster mode.
func (c *Cluster) Option() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:      c.Addrs(),
		ConnWriteTimeout: 2 * time.Second,
		Dialer:           net.Dialer{Timeout: time.Second},
	}
}

// Client returns a plain cluster-mode rueidis client (no client-side cache),
// closed when the test ends.
func (c *Cluster) Client() rueidis.Client {
	c.tb.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		c.tb.Fatalf("redistest: cluster client: %v", err)
	}
	c.tb.Cleanup(rc.Close)
	return rc
}

// KeySlot is the cluster slot of key, as the cluster computes it (CLUSTER
// KEYSLOT).
func (c *Cluster) KeySlot(key string) int64 {
	c.tb.Helper()
	n, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", key).AsInt64()
	if err != nil {
		c.tb.Fatalf("redistest: CLUSTER KEYSLOT %q: %v", key, err)
	}
	return n
}

// Keys lists the keys of every node that match the glob pattern (KEYS, so
// only for the small data sets of tests).
func (c *Cluster) Keys(pattern string) []string {
	c.tb.Helper()
	var keys []string
	for _, s := range c.Nodes {
		ks, err := s.Do("KEYS", pattern).AsStrSlice()
		if err != nil {
			c.tb.Fatalf("redistest: KEYS on %s: %v", s.Addr(), err)
		}
		keys = append(keys, ks...)
	}
	return keys
}
