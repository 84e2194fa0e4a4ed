package leasehold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// WithReplicas rejects a negative count and a timeout that would make WAIT
// block for ever; 0 replicas turns it off.
func TestWithReplicasInput(t *testing.T) {
	srv := redistest.Start(t)
	for _, tt := range []struct {
		n       int
		timeout time.Duration
		ok      bool
	}{
		{-1, time.Second, false},
		{1, 0, false},
		{1, -time.Second, false},
		{0, 0, true},
		{2, time.Second, true},
	} {
		c, err := leasehold.Open(srv.Option(), leasehold.WithReplicas(tt.n, tt.timeout))
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, lease.ErrInvalid)) {
			t.Errorf("WithReplicas(%d, %v): %v", tt.n, tt.timeout, err)
		}
		if c != nil {
			c.Close()
		}
	}
}

// Without WithReplicas an acquisition costs one round trip, as before the
// option existed: the option costs nothing unless set. With it, on a server
// without replicas, WAIT 1 answers 0: the acquisition (one round trip), the
// renewal and WAIT (one more, pipelined) and the release (a third) leave
// nothing held, and the error says why.
func TestWithReplicasCost(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for _, tt := range []struct {
		opts   []leasehold.Option
		rounds int64
	}{
		{nil, 1},
		{[]leasehold.Option{leasehold.WithReplicas(1, 50*time.Millisecond)}, 3},
	} {
		counting := redistest.NewCounting(rc)
		c, err := leasehold.New(counting, tt.opts...)
		if err != nil {
			t.Fatal(err)
		}
		// The first attempt loads the scripts (EVALSHA, then EVAL). An
		// unacknowledged one is released in the background: wait for it.
		if ls, err := rlock.New(c, "cost").TryAcquire(ctx); err == nil {
			_ = ls.Release(ctx)
		}
		locktest.Eventually(t, 5*time.Second, "the warm-up released", func() bool {
			n, _ := srv.Do("EXISTS", "cost").AsInt64()
			return n == 0
		})
		before := counting.Rounds()
		ls, err := rlock.New(c, "cost").TryAcquire(ctx)
		if len(tt.opts) == 0 {
			if err != nil {
				t.Fatal(err)
			}
		} else {
			if !errors.Is(err, lease.ErrNotReplicated) || !strings.Contains(err.Error(), "0 of 1 replicas") {
				t.Errorf("with no replica: %v", err)
			}
			// The unacknowledged acquisition is released in the
			// background, so Acquire returns by its deadline.
			locktest.Eventually(t, 5*time.Second, "the unacknowledged acquisition released", func() bool {
				n, _ := srv.Do("EXISTS", "cost").AsInt64()
				return n == 0
			})
		}
		if got := counting.Rounds() - before; got != tt.rounds {
			t.Errorf("%d options: %d round trips to acquire, want %d", len(tt.opts), got, tt.rounds)
		}
		if ls != nil {
			_ = ls.Release(ctx)
		}
		c.Close()
	}
}
