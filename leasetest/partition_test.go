package leasetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/leasetest"
	"github.com/leasehold/leasehold/partition"
)

// members runs partition groups in a test and records which member runs
// each partition, failing the test on two at once.
type members struct {
	t      *testing.T
	mu     sync.Mutex
	active map[int]string
	tokens map[int]uint64
}

func newMembers(t *testing.T) *members {
	return &members{t: t, active: map[int]string{}, tokens: map[int]uint64{}}
}

// run runs member name of the group "jobs" of n partitions on c until the
// returned stop is called (or the test ends); stop returns Run's error.
func (ms *members) run(name string, c *leasehold.Client, n int) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- partition.New(c, "jobs", n).Run(ctx, func(ctx context.Context, p int) error {
			tok := lease.FromContext(ctx).Token()
			ms.mu.Lock()
			if o, ok := ms.active[p]; ok {
				ms.t.Errorf("partition %d: %s started it while %s ran it", p, name, o)
			}
			if tok <= ms.tokens[p] {
				ms.t.Errorf("partition %d: token %d after %d", p, tok, ms.tokens[p])
			}
			ms.active[p], ms.tokens[p] = name, tok
			ms.mu.Unlock()
			<-ctx.Done()
			ms.mu.Lock()
			delete(ms.active, p)
			ms.mu.Unlock()
			return nil
		})
	}()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				ms.t.Errorf("%s: Run did not return within 10s", name)
			}
		})
		return err
	}
	ms.t.Cleanup(func() { _ = stop() })
	return stop
}

// runs is how many partitions each member runs now.
func (ms *members) runs() map[string]int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m := map[string]int{}
	for _, o := range ms.active {
		m[o]++
	}
	return m
}

// A user's unit test runs two members of a partition group in one process,
// with nothing installed: they split the partitions, and when one stops,
// the other runs them all.
func TestPartitionGroup(t *testing.T) {
	srv := leasetest.NewServer(t)
	ms := newMembers(t)
	stopA := ms.run("a", srv.Open(), 8)
	ms.run("b", srv.Open(), 8)
	eventually(t, 10*time.Second, "4 partitions each", func() bool {
		r := ms.runs()
		return r["a"] == 4 && r["b"] == 4
	})
	if err := stopA(); err != nil {
		t.Fatalf("a's Run: %v", err)
	}
	eventually(t, 5*time.Second, "b runs all 8", func() bool { return ms.runs()["b"] == 8 })
}

// A member cut off from the in-process Redis is dropped when its lease
// ends (the kit's 1.5s watchdog) and its partitions go to the other, never
// two runs of one partition at once; every script of the group runs on the
// kit, the ones that drop a member whose lease ended among them.
func TestPartitionMemberCutOff(t *testing.T) {
	srv := leasetest.NewServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	cutOff, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{proxy.Addr()},
		DisableCache: true, AlwaysRESP2: true, ForceSingleClient: true}, leasehold.WithWatchdog(1500*time.Millisecond),
		leasehold.WithObserver(lease.ObserverFunc(func(lease.Event) {}))) // as the kit's own: no CLIENT TRACKING warning
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cutOff.Close() })
	ms := newMembers(t)
	ms.run("a", srv.Open(), 8)
	ms.run("b", cutOff, 8)
	eventually(t, 10*time.Second, "4 partitions each", func() bool {
		r := ms.runs()
		return r["a"] == 4 && r["b"] == 4
	})
	proxy.Refuse(true)
	proxy.Cut()
	cut := time.Now()
	// b's lease, 1.5s, and 3.5s for a loaded machine under -race.
	eventually(t, 5*time.Second, "a runs all 8", func() bool { return ms.runs()["a"] == 8 })
	t.Logf("a cut-off member's partitions taken over after %v", time.Since(cut))
	proxy.Refuse(false)
	eventually(t, 10*time.Second, "b back, 4 partitions each", func() bool {
		r := ms.runs()
		return r["a"] == 4 && r["b"] == 4
	})
}
