package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Cluster is a Redis Cluster on loopback, owned by a test: each node a
// redis-server started with --cluster-enabled yes, the slots spread over the
// primaries by redis-cli --cluster create, and as many replicas of each
// primary as asked. Its methods fail the test that started it when Redis
// does not answer as they need; For(t) makes them fail a subtest instead.
type Cluster struct {
	tb testing.TB
	// Nodes are every node, in the order they were started; which are
	// primaries changes with failovers (Primaries, Owner and Replica ask).
	Nodes []*Server
	st    *clusterState
}

// clusterState is what a Cluster and its views (For) share.
type clusterState struct {
	primaries, replicas int

	mu   sync.Mutex
	ids  map[*Server]string // CLUSTER MYID, read once
	dead map[*Server]bool   // killed with Kill
}

// For is the same cluster, its methods failing tb: a subtest's t.
func (c *Cluster) For(tb testing.TB) *Cluster {
	return &Cluster{tb: tb, Nodes: c.Nodes, st: c.st}
}

// ReplicaNodeTimeout is the cluster-node-timeout of clusters with replicas
// (StartClusterReplicas): how long a primary may be unreachable before the
// others mark it failed and one of its replicas takes over. Short, so that a
// failover test takes seconds, not tens of seconds; long enough that a
// loaded 2-core machine does not fail a live node.
const ReplicaNodeTimeout = time.Second

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
// test ends. It fails the test if the cluster does not form in 30s. It takes
// about 2s: a primary says cluster_state:ok no sooner than 2s after it
// started (Redis' CLUSTER_WRITABLE_DELAY).
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return startCluster(tb, n, 0, 5*time.Second)
}

// StartClusterReplicas starts a cluster of primaries (at least 3) with
// replicas replicas each, as StartCluster does, and also waits until every
// replica is in sync with its primary. Its cluster-node-timeout is
// ReplicaNodeTimeout, and any replica may take over whatever its data's age
// (cluster-replica-validity-factor 0): a failover after kill -9 of a primary
// takes 2-3s.
func StartClusterReplicas(tb testing.TB, primaries, replicas int) *Cluster {
	tb.Helper()
	return startCluster(tb, primaries, replicas, ReplicaNodeTimeout)
}

func startCluster(tb testing.TB, primaries, replicas int, nodeTimeout time.Duration) *Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: Redis Cluster tests run without it")
	}
	if primaries < 3 {
		tb.Fatalf("redistest: a cluster needs at least 3 primaries, not %d", primaries)
	}
	if replicas < 0 {
		tb.Fatalf("redistest: %d replicas per primary", replicas)
	}
	if _, err := exec.LookPath(CLI()); err != nil {
		tb.Fatalf("redistest: %s not found (it comes with redis-server): %v", CLI(), err)
	}
	c := &Cluster{tb: tb, st: &clusterState{primaries: primaries, replicas: replicas, ids: map[*Server]string{}, dead: map[*Server]bool{}}}
	for i := 0; i < primaries*(1+replicas); i++ {
		s := &Server{tb: tb, dir: tb.TempDir()}
		if err := s.launchClustered(nodeTimeout); err != nil {
			tb.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
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
// port (--cluster-port, Redis 7 and Valkey): the default bus port,
// port+10000, may be taken or out of range. Redis 6.2 knows no
// --cluster-port: there the node gets a port whose port+10000 is free too.
func (s *Server) launchClustered(nodeTimeout time.Duration) error {
	var err error
	for try := 0; try < 20; try++ {
		var bus int
		if s.port, err = FreePort(); err != nil {
			continue
		}
		var busArgs []string
		if _, major := Version(); major == 6 {
			if bus = s.port + 10000; bus > 65535 || !portFree(bus) {
				err = fmt.Errorf("bus port %d of port %d is not free", bus, s.port)
				continue
			}
		} else {
			if bus, err = FreePort(); err != nil || bus == s.port {
				continue
			}
			busArgs = []string{"--cluster-port", strconv.Itoa(bus)}
		}
		s.args = append(busArgs,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--cluster-replica-validity-factor", "0",
			// A replica's first sync starts at once, not after 5s, and
			// its offset is news to the cluster within 1s, not 10s (until
			// it is, CLUSTER SLOTS leaves the replica out).
			"--repl-diskless-sync-delay", "0",
			"--repl-ping-replica-period", "1",
		)
		if err = s.start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("start redis-server: %w", err)
}

// waitReady polls every node until each says cluster_state:ok, maps every
// slot (a client that reads the slots of any node then routes every key
// right) and knows every replica as one, and each primary has its replicas
// online: in sync, and acknowledging writes (WAIT counts them).
func (c *Cluster) waitReady(ctx context.Context) error {
	var last string
	for {
		last = ""
		for _, s := range c.live() {
			if last = c.notReady(s); last != "" {
				break
			}
		}
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %s", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// notReady says why s is not ready yet, or "".
func (c *Cluster) notReady(s *Server) string {
	info, err := c.do(s, "CLUSTER", "INFO").ToString()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		return fmt.Sprintf("%s: %q %v", s.Addr(), firstLine(info), err)
	}
	slots, err := c.do(s, "CLUSTER", "SLOTS").ToArray()
	if err != nil || len(slots) != c.st.primaries {
		return fmt.Sprintf("%s: %d slot ranges, want %d (%v)", s.Addr(), len(slots), c.st.primaries, err)
	}
	nodes, _, err := c.view(s)
	replicas := 0
	for _, n := range nodes {
		if n.has("slave") && n.primary != "" {
			replicas++
		}
	}
	if err != nil || replicas != c.st.primaries*c.st.replicas {
		return fmt.Sprintf("%s: knows %d replicas, want %d (%v)", s.Addr(), replicas, c.st.primaries*c.st.replicas, err)
	}
	repl, err := c.do(s, "INFO", "replication").ToString()
	if err != nil {
		return fmt.Sprintf("%s: %v", s.Addr(), err)
	}
	if strings.Contains(repl, "role:master") && strings.Count(repl, ",state=online,") != c.st.replicas {
		return fmt.Sprintf("%s: %d replicas online, want %d", s.Addr(), strings.Count(repl, ",state=online,"), c.st.replicas)
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// do runs one command on s on a fresh connection and returns its reply or
// the error of reaching s: the harness's view while nodes die and fail over.
func (c *Cluster) do(s *Server, args ...string) rueidis.RedisResult {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, DisableRetry: true,
		ForceSingleClient: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	defer rc.Close()
	// Generous: MIGRATE waits for the target, and a loaded 2-core machine
	// running the suite's packages side by side can be slow to answer.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return rc.Do(ctx, rc.B().Arbitrary(args...).Build())
}

// must runs one command on s and fails the test on any error, Redis' own
// included.
func (c *Cluster) must(s *Server, args ...string) rueidis.RedisResult {
	c.tb.Helper()
	res := c.do(s, args...)
	if err := res.Error(); err != nil {
		c.tb.Fatalf("redistest: %s on %s: %v", strings.Join(args, " "), s.Addr(), err)
	}
	return res
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
	n, err := c.must(c.live()[0], "CLUSTER", "KEYSLOT", key).AsInt64()
	if err != nil {
		c.tb.Fatalf("redistest: CLUSTER KEYSLOT %q: %v", key, err)
	}
	return n
}

// Keys lists the keys of every primary that match the glob pattern (KEYS,
// so only for the small data sets of tests).
func (c *Cluster) Keys(pattern string) []string {
	c.tb.Helper()
	var keys []string
	for _, s := range c.Primaries() {
		ks, err := c.must(s, "KEYS", pattern).AsStrSlice()
		if err != nil {
			c.tb.Fatalf("redistest: KEYS on %s: %v", s.Addr(), err)
		}
		keys = append(keys, ks...)
	}
	return keys
}

// live lists the nodes not killed, in start order.
func (c *Cluster) live() []*Server {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	var ls []*Server
	for _, s := range c.Nodes {
		if !c.st.dead[s] {
			ls = append(ls, s)
		}
	}
	return ls
}

// ID is the node's id in the cluster (CLUSTER MYID).
func (c *Cluster) ID(s *Server) string {
	c.tb.Helper()
	c.st.mu.Lock()
	id, ok := c.st.ids[s]
	c.st.mu.Unlock()
	if ok {
		return id
	}
	id, err := c.must(s, "CLUSTER", "MYID").ToString()
	if err != nil {
		c.tb.Fatalf("redistest: CLUSTER MYID on %s: %v", s.Addr(), err)
	}
	c.st.mu.Lock()
	c.st.ids[s] = id
	c.st.mu.Unlock()
	return id
}

// clusterNode is one line of CLUSTER NODES: a node as one node sees it.
type clusterNode struct {
	id, addr string
	flags    []string
	primary  string   // the id of its primary, if a replica
	slots    []string // "0-5460", "5461", or "[slot->-id]" while migrating
}

func (n clusterNode) has(flag string) bool { return slices.Contains(n.flags, flag) }

// serves reports whether n is a healthy primary owning slot.
func (n clusterNode) serves(slot int64) bool {
	if !n.has("master") || n.has("fail") || n.has("fail?") {
		return false
	}
	for _, r := range n.slots {
		if strings.HasPrefix(r, "[") {
			continue
		}
		lo, hi, ranged := strings.Cut(r, "-")
		a, _ := strconv.ParseInt(lo, 10, 64)
		b := a
		if ranged {
			b, _ = strconv.ParseInt(hi, 10, 64)
		}
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// view is the cluster as s sees it (CLUSTER NODES), and whether s says
// cluster_state:ok.
func (c *Cluster) view(s *Server) (nodes []clusterNode, ok bool, err error) {
	info, err := c.do(s, "CLUSTER", "INFO").ToString()
	if err != nil {
		return nil, false, err
	}
	text, err := c.do(s, "CLUSTER", "NODES").ToString()
	if err != nil {
		return nil, false, err
	}
	// RESP3 sends CLUSTER NODES as a verbatim string, which rueidis hands
	// over with its format prefix.
	text = strings.TrimPrefix(text, "txt:")
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: strings.Split(strings.TrimPrefix(f[2], "myself,"), ","), slots: f[8:]}
		if f[3] != "-" {
			n.primary = f[3]
		}
		nodes = append(nodes, n)
	}
	return nodes, strings.Contains(info, "cluster_state:ok"), nil
}

// byAddr is the node at addr.
func (c *Cluster) byAddr(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// currentView is the view of the first live node that answers.
func (c *Cluster) currentView() []clusterNode {
	c.tb.Helper()
	var last error
	for _, s := range c.live() {
		nodes, _, err := c.view(s)
		if err == nil {
			return nodes
		}
		last = err
	}
	c.tb.Fatalf("redistest: no cluster node answers: %v", last)
	return nil
}

// Primaries are the live primaries, as the cluster reports them now.
func (c *Cluster) Primaries() []*Server {
	c.tb.Helper()
	var ps []*Server
	for _, n := range c.currentView() {
		if s := c.byAddr(n.addr); s != nil && n.has("master") && !n.has("fail") && !c.isDead(s) {
			ps = append(ps, s)
		}
	}
	return ps
}

func (c *Cluster) isDead(s *Server) bool {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.dead[s]
}

// Owner is the primary that serves slot now, as the cluster reports it.
func (c *Cluster) Owner(slot int64) *Server {
	c.tb.Helper()
	for _, n := range c.currentView() {
		if n.serves(slot) {
			return c.byAddr(n.addr)
		}
	}
	c.tb.Fatalf("redistest: no primary serves slot %d", slot)
	return nil
}

// Replica is a live replica of primary, as the cluster reports it.
func (c *Cluster) Replica(primary *Server) *Server {
	c.tb.Helper()
	id := c.ID(primary)
	for _, n := range c.currentView() {
		if s := c.byAddr(n.addr); s != nil && n.primary == id && !n.has("fail") && !c.isDead(s) {
			return s
		}
	}
	c.tb.Fatalf("redistest: %s has no live replica", primary.Addr())
	return nil
}

// Kill kills s with kill -9; the cluster's other nodes find out after
// ReplicaNodeTimeout (StartClusterReplicas) and, if s was a primary, one of
// its replicas takes over (AwaitOwner waits for that). The harness asks only
// live nodes from now on.
func (c *Cluster) Kill(s *Server) {
	c.st.mu.Lock()
	c.st.dead[s] = true
	c.st.mu.Unlock()
	s.Kill()
}

// Unlink stops replica (SIGSTOP) and closes its replication link at its
// primary (CLIENT KILL TYPE replica): what the primary writes from now on
// reaches no replica, and the replica cannot link again, until relink
// resumes it. Relink within ReplicaNodeTimeout, or the cluster marks it
// failed too, and ask the cluster nothing meanwhile: the stopped node would
// not answer.
func (c *Cluster) Unlink(replica *Server) (relink func()) {
	c.tb.Helper()
	id := c.ID(replica)
	var primary *Server
	for _, n := range c.currentView() {
		if n.id != id || n.primary == "" {
			continue
		}
		for _, p := range c.live() {
			if c.ID(p) == n.primary {
				primary = p
			}
		}
	}
	if primary == nil {
		c.tb.Fatalf("redistest: %s is not a replica", replica.Addr())
	}
	replica.Pause()
	c.must(primary, "CLIENT", "KILL", "TYPE", "replica")
	return replica.Resume
}

// Rejoin restarts s, killed with Kill, empty (its cluster identity kept):
// it finds its slots served by another primary and becomes its replica.
// Rejoin returns once every live node knows it as a replica, and its
// primary has it online; it fails the test after d.
func (c *Cluster) Rejoin(s *Server, d time.Duration) {
	c.tb.Helper()
	s.Restart()
	c.st.mu.Lock()
	delete(c.st.dead, s)
	c.st.mu.Unlock()
	c.AwaitReplicas(d)
}

// AwaitReplicas waits until every live node says cluster_state:ok and every
// primary has its replicas online (in sync, and acknowledging writes), as
// after StartClusterReplicas, and fails the test after d. After Failover the
// old primary syncs anew as a replica: until then what the new primary
// writes reaches no replica, and a second failover loses it.
func (c *Cluster) AwaitReplicas(d time.Duration) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		c.tb.Fatalf("redistest: replicas: %v", err)
	}
}

// Failover runs CLUSTER FAILOVER on replica, the graceful failover: the
// primary stops taking writes, the replica catches up and takes over its
// slots, the old primary becomes its replica. It returns once every live
// node says cluster_state:ok and names replica the primary of each slot the
// old primary served (AwaitReplicas then waits for the old primary to be in
// sync), and fails the test after d.
func (c *Cluster) Failover(replica *Server, d time.Duration) {
	c.tb.Helper()
	// A replica refuses a failover while it is not yet in sync with its
	// primary (a busy machine, a primary just restarted): ask again.
	deadline := time.Now().Add(d)
	for {
		err := c.do(replica, "CLUSTER", "FAILOVER").Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	id := c.ID(replica)
	c.await(d, "CLUSTER FAILOVER on "+replica.Addr(), func(nodes []clusterNode) bool {
		for _, n := range nodes {
			if n.id == id {
				return n.has("master") && len(n.slots) > 0
			}
		}
		return false
	})
}

// AwaitOwner waits until every live node says cluster_state:ok and names a
// live primary other than old the owner of slot, and returns that primary;
// it fails the test after d. After Kill of the slot's primary, it is the
// promoted replica.
func (c *Cluster) AwaitOwner(slot int64, old *Server, d time.Duration) *Server {
	c.tb.Helper()
	var owner *Server
	c.await(d, fmt.Sprintf("a new primary for slot %d", slot), func(nodes []clusterNode) bool {
		for _, n := range nodes {
			if n.serves(slot) {
				s := c.byAddr(n.addr)
				if s == nil || s == old || c.isDead(s) || (owner != nil && s != owner) {
					return false
				}
				owner = s
				return true
			}
		}
		return false
	})
	return owner
}

// await polls every live node until each says cluster_state:ok and its view
// satisfies ok, and fails the test after d.
func (c *Cluster) await(d time.Duration, what string, ok func([]clusterNode) bool) {
	c.tb.Helper()
	deadline := time.Now().Add(d)
	for {
		done, last := true, ""
		for _, s := range c.live() {
			nodes, stateOK, err := c.view(s)
			switch {
			case err != nil:
				last = fmt.Sprintf("%s: %v", s.Addr(), err)
			case !stateOK:
				last = s.Addr() + ": cluster_state not ok"
			case !ok(nodes):
				last = s.Addr() + ": not yet"
			default:
				continue
			}
			done = false
			break
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("redistest: after %v, no %s: %s", d, what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Migration is one slot on its way from one primary to another, as
// redis-cli --cluster reshard moves it: Begin, MoveKeys until none is left,
// Finish. Meanwhile the source answers for the keys it still has and sends
// clients to the target (ASK) for the others.
type Migration struct {
	c        *Cluster
	Slot     int64
	From, To *Server
}

// BeginMigration marks slot IMPORTING on to and MIGRATING on its owner
// (CLUSTER SETSLOT), in that order, as redis-cli does.
func (c *Cluster) BeginMigration(slot int64, to *Server) *Migration {
	c.tb.Helper()
	from := c.Owner(slot)
	if from == to {
		c.tb.Fatalf("redistest: slot %d is already on %s", slot, to.Addr())
	}
	s := strconv.FormatInt(slot, 10)
	c.must(to, "CLUSTER", "SETSLOT", s, "IMPORTING", c.ID(from))
	c.must(from, "CLUSTER", "SETSLOT", s, "MIGRATING", c.ID(to))
	return &Migration{c: c, Slot: slot, From: from, To: to}
}

// MoveKeys moves up to batch keys of the slot from the source to the target
// (CLUSTER GETKEYSINSLOT, then one MIGRATE ... KEYS, which keeps their TTLs)
// and returns how many it moved: 0 once the source has none left.
func (m *Migration) MoveKeys(batch int) int {
	m.c.tb.Helper()
	keys, err := m.c.must(m.From, "CLUSTER", "GETKEYSINSLOT", strconv.FormatInt(m.Slot, 10), strconv.Itoa(batch)).AsStrSlice()
	if err != nil {
		m.c.tb.Fatalf("redistest: CLUSTER GETKEYSINSLOT: %v", err)
	}
	if len(keys) == 0 {
		return 0
	}
	host, port, _ := strings.Cut(m.To.Addr(), ":")
	args := append([]string{"MIGRATE", host, port, "", "0", "15000", "KEYS"}, keys...)
	// NOKEY: the keys expired between the two commands.
	if err := m.c.do(m.From, args...).Error(); err != nil && !strings.HasPrefix(err.Error(), "NOKEY") {
		m.c.tb.Fatalf("redistest: MIGRATE %d keys of slot %d: %v", len(keys), m.Slot, err)
	}
	return len(keys)
}

// Finish moves the keys left, in batches of 10 (redis-cli's default
// pipeline), then gives the slot to the target on every live primary
// (CLUSTER SETSLOT NODE: the target first, then the source, then the
// others), and waits until every live node says so.
func (m *Migration) Finish() {
	m.c.tb.Helper()
	for m.MoveKeys(10) > 0 {
	}
	s, to := strconv.FormatInt(m.Slot, 10), m.c.ID(m.To)
	m.c.must(m.To, "CLUSTER", "SETSLOT", s, "NODE", to)
	m.c.must(m.From, "CLUSTER", "SETSLOT", s, "NODE", to)
	for _, p := range m.c.Primaries() {
		if p != m.To && p != m.From {
			m.c.must(p, "CLUSTER", "SETSLOT", s, "NODE", to)
		}
	}
	m.c.await(10*time.Second, fmt.Sprintf("slot %d on %s", m.Slot, m.To.Addr()), func(nodes []clusterNode) bool {
		for _, n := range nodes {
			if n.serves(m.Slot) {
				return n.id == to
			}
		}
		return false
	})
}

// MigrateSlot moves slot, keys and all, from its owner to the primary to,
// live: BeginMigration, then Finish.
func (c *Cluster) MigrateSlot(slot int64, to *Server) {
	c.tb.Helper()
	c.BeginMigration(slot, to).Finish()
}
