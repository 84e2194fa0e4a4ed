package event_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/event"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// newHub returns a hub on its own rueidis client to addr, its invalidations
// fed to the hub; both close when the test ends.
func newHub(t *testing.T, addr string) *event.Hub {
	t.Helper()
	var h *event.Hub
	ready := make(chan struct{})
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr},
		OnInvalidations: func(keys []rueidis.RedisMessage) {
			select {
			case <-ready:
				h.Invalidate(keys)
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h = event.NewHub(rc)
	close(ready)
	t.Cleanup(func() { h.Close(); rc.Close() })
	return h
}

func woken(w *event.Waiter, within time.Duration) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(within):
		return false
	}
}

// A waiter is woken by a message on its channel published after Watch
// returned, and by a change of its key, with no message.
func TestWaiterWoken(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv.Addr())
	for _, tt := range []struct {
		name string
		wake []string
	}{
		{"message", []string{"PUBLISH", "ch-message", "0"}},
		{"wake-all message", []string{"PUBLISH", "ch-wake-all message", "1"}},
		{"invalidation", []string{"DEL", "key-invalidation"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			key := "key-" + tt.name
			if err := srv.Do("SET", key, "1").Error(); err != nil {
				t.Fatal(err)
			}
			w, err := h.Watch(ctx, "ch-"+tt.name, key)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Leave()
			if woken(w, 50*time.Millisecond) {
				t.Fatal("woken before anything happened")
			}
			if err := srv.Do(tt.wake...).Error(); err != nil {
				t.Fatal(err)
			}
			if !woken(w, 5*time.Second) {
				t.Fatalf("%v woke no waiter", tt.wake)
			}
		})
	}
}

// Close wakes a waiter, and Watch fails from then on.
func TestCloseEndsWaiter(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := h.Watch(ctx, "ch", "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Leave()
	h.Close()
	if !woken(w, 5*time.Second) {
		t.Fatal("Close did not wake the waiter")
	}
	if _, err := h.Watch(ctx, "ch", ""); err == nil {
		t.Fatal("Watch after Close succeeded")
	}
}

// A Watch whose ctx ends before the subscription is confirmed fails with
// ctx's error.
func TestWatchCtxDone(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Watch(ctx, "ch", ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch with a cancelled ctx = %v, want context.Canceled", err)
	}
}
