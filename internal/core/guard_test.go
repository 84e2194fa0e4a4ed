package core

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A waiter's key that no one waits on any more (unwatch) is not read, whether
// its read was still to come or due at the next round: read once the key is
// gone for good, it would stay in Redis' tracking table. The guard here has
// no goroutine and no connection: the test takes the rounds' steps itself.
func TestUnwatchDropsTheRead(t *testing.T) {
	g := &guard{ctx: context.Background(), keys: make(map[string][]*Hold), pending: make(map[string]struct{}),
		watching: make(map[string]struct{}), watchDue: make(map[string]struct{})}
	g.armerSet = true // no timer: the test runs the steps
	due := func() []string {
		g.mu.Lock()
		g.watchAt = time.Now().Add(-time.Second)
		g.armDue()
		g.mu.Unlock()
		keys := g.watched()
		slices.Sort(keys)
		return keys
	}
	g.watch("left-early")
	g.watch("waited")
	g.unwatch("left-early")
	if got := due(); !slices.Equal(got, []string{"waited"}) {
		t.Fatalf("read %q, want only the key still waited on", got)
	}
	g.watch("left-late")
	g.mu.Lock()
	g.watchAt = time.Now().Add(-time.Second)
	g.armDue() // due at the next round
	g.mu.Unlock()
	g.unwatch("left-late")
	if got := due(); len(got) != 0 {
		t.Fatalf("read %q, whose waiters left before the round", got)
	}
}
