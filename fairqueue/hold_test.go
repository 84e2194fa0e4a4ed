package fairqueue_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// WithHoldAtLeast on a fair lock: a lease released sooner than d after its
// acquisition leaves the lock taken, by no holder, until d after it; the
// head of the queue, waiting since before the release, takes it then. It is
// told as when a lease runs out: by the release itself when the keep ends
// within the head's refresh interval, else by its Client's keeper in the
// round before it ends. The lower bound (never before d) is exact; the upper
// one is generous for a loaded machine, yet far below the 30s lease the
// head was timing before the release.
func TestHoldAtLeastFair(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	tests := []struct {
		name  string
		d     time.Duration
		queue time.Duration // the queue timeout; its third is the refresh interval
	}{
		{"keep within the refresh interval: told by the release", 800 * time.Millisecond, 5 * time.Second},
		{"keep beyond the refresh interval: told by the keeper", 1500 * time.Millisecond, 1200 * time.Millisecond},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "fair-job-" + string(rune('a'+i))
			sent := time.Now()
			ls := mustAcquire(t, fairqueue.New(c, name, leasehold.WithHoldAtLeast(tt.d)), ctx)
			waiting := goAcquire(fairqueue.New(other, name, leasehold.WithQueueTimeout(tt.queue)), ctx)
			queued(t, srv, name, 1)
			release(t, ls)
			m, err := srv.Do("HGETALL", name).AsStrMap()
			if err != nil || len(m) != 1 || m["leasehold:kept"] != ls.Owner() {
				t.Fatalf("after an early release, HGETALL = %v, %v; want leasehold:kept -> %s", m, err, ls.Owner())
			}
			_, err = fairqueue.New(c, name).TryAcquire(ctx)
			wantErr(t, err, lease.ErrNotAcquired)
			got := await(t, waiting, tt.d+5*time.Second, "the head of the queue")
			took := time.Since(sent)
			release(t, got)
			t.Logf("the head took the lock %v after the first acquisition was sent (hold at least %v)", took, tt.d)
			if took < tt.d {
				t.Fatalf("the head took the lock %v after the acquisition, before %v", took, tt.d)
			}
		})
	}
}

// Redisson's fair lock script, run verbatim, finds a fair lock kept by
// WithHoldAtLeast held, and queues behind it with the rest of the keep as
// the time to wait.
func TestHoldAtLeastFairRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	const d = 800 * time.Millisecond

	sent := time.Now()
	release(t, mustAcquire(t, fairqueue.New(c, "shared", leasehold.WithHoldAtLeast(d)), ctx))
	ttl, err := java.Do(ctx, java.B().Eval().Script(redissonFairLock).Numkeys(3).
		Key("shared", "redisson_lock_queue:{shared}", "redisson_lock_timeout:{shared}").
		Arg("30000", javaFairOwner, "5000", nowMs()).Build()).AsInt64()
	if err != nil {
		t.Fatalf("Redisson's fair lock script on the kept lock: %v (a nil reply means it took the lock)", err)
	}
	if ttl <= 0 || time.Duration(ttl)*time.Millisecond > d {
		t.Fatalf("Redisson's fair lock script returned %dms to wait, want the rest of the %v keep", ttl, d)
	}
	if q := queue(t, srv, "shared"); len(q) != 1 || q[0] != javaFairOwner {
		t.Fatalf("queue %v, want the Java waiter", q)
	}
	// The Java waiter, now the head, takes the lock once the keep is over,
	// timing it as Redisson does.
	time.Sleep(time.Duration(ttl) * time.Millisecond)
	for !javaFairLock(t, java, "shared") {
		if time.Since(sent) > d+5*time.Second {
			t.Fatalf("the Java head could not take the lock %v after the acquisition", time.Since(sent))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(sent); el < d {
		t.Fatalf("the Java head took the lock %v after the acquisition, before the %v keep ran out", el, d)
	}
	javaFairUnlock(t, java, "shared")
}
