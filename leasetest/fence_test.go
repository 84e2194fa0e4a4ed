package leasetest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/leasetest"
	"github.com/leasehold/leasehold/rlock"
)

// fence.Redis works on the kit's server: a holder whose lease was replaced
// has its write refused.
func TestFencedWrite(t *testing.T) {
	ctx := ctxTimeout(t, 10*time.Second)
	srv := leasetest.NewServer(t)
	c := srv.Open()
	rc := rawClient(t, srv)
	store := fence.NewRedis(rc) // the resource: here, a key on the same server

	l := rlock.New(c, "report")
	old := acquire(t, ctx, l)
	release(t, old) // as if its lease had run out
	cur := acquire(t, ctx, l)
	defer release(t, cur)

	if err := store.Set(ctx, "report:body", "new", cur.Token()); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "report:body", "new, again", cur.Token()); err != nil {
		t.Fatalf("a second write under the same lease: %v", err)
	}
	err := store.Set(ctx, "report:body", "old", old.Token())
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("write of the replaced holder: %v, want fence.ErrStale", err)
	}
	v, err := rc.Do(ctx, rc.B().Get().Key("report:body").Build()).ToString()
	if err != nil || v != "new, again" {
		t.Fatalf("report:body = %q, %v; want the current holder's value", v, err)
	}
}

// The Client's own Fence works on the kit's server with no client of the
// test's own (the unit test docs/testing.md shows): the replaced holder's
// write is refused, and a command Redis rejects fails in Redis' words.
func TestClientFence(t *testing.T) {
	ctx := ctxTimeout(t, 10*time.Second)
	c := leasetest.Open(t)
	store := c.Fence()

	l := rlock.New(c, "report")
	old := acquire(t, ctx, l)
	release(t, old) // as if its lease had run out
	cur := acquire(t, ctx, l)
	defer release(t, cur)

	if err := store.Set(ctx, "report:body", "new", cur.Token()); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "report:body", "old", old.Token()); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("write of the replaced holder: %v, want fence.ErrStale", err)
	}
	reply, err := store.Do(ctx, "report:body", cur.Token(), "SET", "newer", "GET")
	if s, _ := reply.ToString(); err != nil || s != "new" {
		t.Fatalf("SET GET = %q, %v; want the current holder's value", s, err)
	}
	_, err = store.Do(ctx, "report:body", cur.Token(), "INCRBYY", "1")
	if want := `fence: do "report:body": Redis refused INCRBYY: unknown command`; err == nil || err.Error() != want || !errors.Is(err, lease.ErrRedis) {
		t.Fatalf("an unknown command: %v, want %s", err, want)
	}
	_, err = store.Do(ctx, "report:body", cur.Token(), "HSET", "f", "v")
	if want := `fence: do "report:body": Redis refused HSET: WRONGTYPE Operation against a key holding the wrong kind of value`; err == nil || err.Error() != want {
		t.Fatalf("HSET of a string: %v, want %s", err, want)
	}
}
