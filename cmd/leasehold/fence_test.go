package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/semaphore"
)

// A string holding an integer was shown as a semaphore whatever it was: a
// counter written through fence ("ops:0 ... kind semaphore total 406"), and
// fence's own record of it. Fence's record shows as one, with its resource
// and the last token applied; an integer with none of a semaphore's other
// keys as either a counter or an unused semaphore. release leaves both
// alone, and list shows neither.
func TestFenceRecord(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := acquire(t, rlock.New(c, "ops"), ctx)
	f := fence.NewRedis(srv.Client())
	records := map[string]string{ // key -> its record, as docs/fencing.md lays it out
		"ops:0":            "leasehold_fence:{ops:0}",
		"{acct:1}:balance": "leasehold_fence:{acct:1}:balance",
	}
	for key := range records {
		if _, err := f.Do(ctx, key, l.Token(), "INCRBY", "406"); err != nil {
			t.Fatal(err)
		}
	}

	wantLines(t, mustCmd(t, srv, "", "inspect", "ops:0"),
		`^name +ops:0$`, `^kind +either a counter or an unused semaphore \(`, `^value +406$`)
	if j := inspectJSON(t, srv, "ops:0"); j.Kind != "counter_or_unused_semaphore" || j.Value == nil || *j.Value != 406 ||
		j.Semaphore != nil || j.Fence != nil || j.PrefixHint != nil {
		t.Errorf("-json ops:0: %+v", j)
	}
	for key, record := range records {
		q := regexp.QuoteMeta(key)
		wantLines(t, mustCmd(t, srv, "", "inspect", record),
			`^name +`+regexp.QuoteMeta(record)+`$`,
			`^kind +fence \(package fence's record of the last token applied to a key\)$`,
			`^resource +`+q+`$`,
			fmt.Sprintf(`^token +%d, the last applied to %s: a lower one is refused$`, l.Token(), q),
			`^ttl +none: kept while `+q+` has no expiry$`)
		j := inspectJSON(t, srv, record)
		if j.Kind != "fence" || j.Fence == nil || j.Fence.Resource != key || j.Fence.Token != l.Token() || j.Fence.TTLms != -1 ||
			j.Semaphore != nil || j.Value != nil {
			t.Errorf("-json %s: %+v, fence %+v", record, j, j.Fence)
		}
		if _, err := cmd(t, srv, "", "release", "--yes", record); err == nil || !strings.Contains(err.Error(), "fence's record") {
			t.Errorf("release of %s: %v, want a refusal", record, err)
		}
	}
	if _, err := cmd(t, srv, "", "release", "--yes", "ops:0"); err == nil || !strings.Contains(err.Error(), "counter") {
		t.Errorf("release of ops:0: %v, want a refusal", err)
	}
	if n, _ := srv.Do("EXISTS", "ops:0", "leasehold_fence:{ops:0}", "{acct:1}:balance", "leasehold_fence:{acct:1}:balance").AsInt64(); n != 4 {
		t.Fatalf("%d of the 4 keys left after the refused releases", n)
	}
	if out := mustCmd(t, srv, "", "list"); strings.Count(out, "\n") != 2 || !regexp.MustCompile(`(?m)^ops +rlock `).MatchString(out) {
		t.Errorf("list: want the rlock ops alone:\n%s", out)
	}
}

// A semaphore (Redisson's layout, made by package semaphore) shows as one
// while Redis keeps more of it than its count: permits held, or Clients on
// its channel waiting for a permit when none is available, which is all
// there is of a semaphore of 0 with a waiter. With its count alone it is
// either a counter or an unused semaphore.
func TestSemaphoreOrCounter(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	unused := func(name string, n int) {
		t.Helper()
		eventually(t, 5*time.Second, name+" shown as a counter or an unused semaphore", func() bool {
			j := inspectJSON(t, srv, name)
			return j.Kind == "counter_or_unused_semaphore" && *j.Value == int64(n) && j.Semaphore == nil
		})
	}
	pool := semaphore.New(c, "pool")
	if ok, err := pool.TrySetPermits(ctx, 2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	unused("pool", 2)
	one := acquire(t, pool, ctx)
	wantLines(t, mustCmd(t, srv, "", "inspect", "pool"),
		`^kind +semaphore \(`, `^total +2$`, `^available +1$`, `^state +1 permits held by 1 holders$`)
	if err := one.Release(ctx); err != nil {
		t.Fatal(err)
	}
	unused("pool", 2)

	gate := semaphore.New(c, "gate")
	if ok, err := gate.TrySetPermits(ctx, 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	unused("gate", 0)
	wctx, stop := context.WithCancel(ctx)
	waiter := semaphore.New(open(t, srv), "gate").AcquireAsync(wctx)
	eventually(t, 5*time.Second, "gate shown as a semaphore with its waiter", func() bool {
		j := inspectJSON(t, srv, "gate")
		return j.Kind == "semaphore" && j.Semaphore != nil && *j.Semaphore.Total == 0 && j.Value == nil
	})
	wantLines(t, mustCmd(t, srv, "", "inspect", "gate"), `^kind +semaphore \(`, `^total +0$`, `^available +0$`)
	stop()
	if _, err := waiter.Result(); err == nil {
		t.Fatal("the waiter took a permit of 0")
	}
	unused("gate", 0)
}
