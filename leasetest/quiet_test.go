package leasetest_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetest"
	"github.com/leasehold/leasehold/rlock"
)

// recordingT is a *testing.T whose Logf is recorded, to see what the kit
// logs.
type recordingT struct {
	*testing.T
	mu   sync.Mutex
	logs []string
}

func (t *recordingT) Logf(format string, a ...any) {
	t.mu.Lock()
	t.logs = append(t.logs, fmt.Sprintf(format, a...))
	t.mu.Unlock()
	t.T.Logf(format, a...)
}

// TestQuiet: a kit Client logs nothing of what the package doc states (no
// CLIENT TRACKING on miniredis), and a warning it does log reads
// "leasehold: ..." once. Every kit Client used to log a 250-character
// "leasehold: leasehold: CLIENT TRACKING unavailable: ..." warning.
func TestQuiet(t *testing.T) {
	rt := &recordingT{T: t}
	srv := leasetest.NewServer(rt)
	c := srv.Open()
	if c.Stats().Tracking {
		t.Fatal("Stats().Tracking on miniredis, which has no CLIENT TRACKING: the kit's doc is wrong")
	}
	ctx := ctxTimeout(t, 5*time.Second)
	release(t, acquire(t, ctx, rlock.New(c, "quiet")))
	srv.Open() // a second Client, as another process
	rt.mu.Lock()
	logs := slices.Clone(rt.logs)
	rt.mu.Unlock()
	if len(logs) != 0 {
		t.Errorf("the kit logged %q; want nothing", logs)
	}
}
