package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// WAITERS of an rlock counts the Clients waiting for it: four goroutines
// on two Clients are two Clients subscribed to its channel (the column read
// 0 before: an rlock keeps no queue in Redis). Redis does not see the
// goroutines, and the help says so.
func TestWaitersCountsClients(t *testing.T) {
	srv := redistest.Start(t)
	holder, a, b := open(t, srv), open(t, srv), open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ls := acquire(t, rlock.New(holder, "busy"), ctx)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 4)
	for _, c := range []*leasehold.Client{a, a, b, b} {
		go func() {
			defer func() { done <- struct{}{} }()
			if l, err := rlock.New(c, "busy").Acquire(wctx); err == nil {
				_ = l.Release(context.Background())
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.Stats().Waiters+b.Stats().Waiters < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	wantLines(t, mustCmd(t, srv, "", "list"), `^busy +rlock +- +1 +1 +\S+ +\d+ +2 clients$`)
	wantLines(t, mustCmd(t, srv, "", "inspect", "busy"), `^waiting Clients: 2 \(subscribed to the lock's channel`)
	if j := parseJSON(t, mustCmd(t, srv, "", "inspect", "-json", "busy")); j[0].WaitingClients == nil || *j[0].WaitingClients != 2 {
		t.Errorf("-json waiting_clients %v, want 2", j[0].WaitingClients)
	}
	wantLines(t, mustCmd(t, srv, "", "help", "list"), `each subscribed once to the lock.s channel however many of its`)
	stop()
	for range 4 {
		<-done
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// -prefix reads the locks of a Client opened with leasehold.WithKeyPrefix
// by the names its code gives, and shows them so.
func TestPrefixFlag(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithKeyPrefix("billing:"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acquire(t, rlock.New(c, "cleanup"), ctx)
	wantLines(t, mustCmd(t, srv, "", "-prefix", "billing:", "inspect", "cleanup"), `^name +cleanup$`, `^state +held by 1 owner$`)
	wantLines(t, mustCmd(t, srv, "", "inspect", "cleanup"), `^state +free$`)
	wantLines(t, mustCmd(t, srv, "", "inspect", "billing:cleanup"), `^name +billing:cleanup$`, `^state +held by 1 owner$`)
	wantLines(t, mustCmd(t, srv, "", "list", "-prefix", "billing:", "clean*"), `^NAME`, `^cleanup +rlock `)
	wantLines(t, mustCmd(t, srv, "", "-prefix", "billing:", "release", "--yes", "cleanup"), `^released cleanup \(rlock\)`)
	if n, _ := srv.Do("EXISTS", "billing:cleanup").AsInt64(); n != 0 {
		t.Error("billing:cleanup is still there after the release")
	}
	if _, err := cmd(t, srv, "", "-prefix", "{billing}:", "inspect", "cleanup"); err == nil {
		t.Error("-prefix with braces: no error")
	}
}

// A service's Client opened with WithKeyPrefix("billing:") keeps its lock
// account:0 at billing:account:0; inspect account:0 said only "kind free
// (no lock key)". inspect, list and release of a name that is free now
// name the locks found whose keys end with it after another prefix, and the
// -prefix that reads them; -json carries them in prefix_hint.
func TestPrefixHint(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	billing := open(t, srv, leasehold.WithKeyPrefix("billing:"))
	acquire(t, rlock.New(billing, "account:0"), ctx)
	acquire(t, rlock.New(billing, "job[1]"), ctx) // a name that is a glob
	acquire(t, rlock.New(open(t, srv), "plain"), ctx)
	srv.Do("SET", "stats:account:0", "x")       // not a lock
	srv.Do("SET", "hits:account:0", "7")        // a counter (or an unused semaphore)
	srv.Do("HSET", "cache:account:0", "a", "b") // a hash, not a lock

	const hint = `^no lock "account:0"; found "billing:account:0" \(rlock\): did you mean -prefix billing:\?$`
	wantLines(t, mustCmd(t, srv, "", "inspect", "account:0"), `^kind +free \(no lock key\)$`, hint)
	wantLines(t, mustCmd(t, srv, "", "-prefix", "shop:", "inspect", "account:0"), hint)
	wantLines(t, mustCmd(t, srv, "", "inspect", "job[1]"),
		`^no lock "job\[1\]"; found "billing:job\[1\]" \(rlock\): did you mean -prefix billing:\?$`)
	wantLines(t, mustCmd(t, srv, "", "-prefix", "billing:", "inspect", "plain"),
		`^no lock "plain"; found "plain" \(rlock\): did you mean no -prefix\?$`)
	if out := mustCmd(t, srv, "", "-prefix", "billing:", "inspect", "account:0"); strings.Contains(out, `no lock "`) {
		t.Errorf("inspect of the lock under its prefix hints:\n%s", out)
	}
	if out := mustCmd(t, srv, "", "inspect", "never-used"); strings.Contains(out, `no lock "`) {
		t.Errorf("inspect of a name nobody uses hints:\n%s", out)
	}

	j := inspectJSON(t, srv, "account:0")
	if h := j.PrefixHint; j.Kind != "free" || h == nil || !h.Complete || len(h.Found) != 1 ||
		h.Found[0].Key != "billing:account:0" || h.Found[0].Prefix != "billing:" || h.Found[0].Kind != "rlock" {
		t.Errorf("-json prefix_hint %+v", h)
	}
	if h := inspectJSON(t, srv, "never-used").PrefixHint; h == nil || h.Found == nil || len(h.Found) != 0 || !h.Complete {
		t.Errorf("-json prefix_hint of a name nobody uses: %+v, want found [], complete", h)
	}
	if h := parseJSON(t, mustCmd(t, srv, "", "-prefix", "billing:", "inspect", "-json", "account:0"))[0].PrefixHint; h != nil {
		t.Errorf("-json prefix_hint of a held lock: %+v, want null", h)
	}

	wantLines(t, mustCmd(t, srv, "", "list", "account:*"),
		`^no locks match "account:\*"; found "billing:account:0" \(rlock\): did you mean -prefix billing:\?$`)
	wantLines(t, mustCmd(t, srv, "", "list", "acc?unt:[0-9]"),
		`^no locks match "acc\?unt:\[0-9\]"; found "billing:account:0" \(rlock\): did you mean -prefix billing:\?$`)
	wantLines(t, mustCmd(t, srv, "", "release", "--yes", "account:0"),
		`^account:0 is not held: nothing to release; found "billing:account:0" \(rlock\): did you mean -prefix billing:\?$`)
	if n, _ := srv.Do("EXISTS", "billing:account:0").AsInt64(); n != 1 {
		t.Fatal("release of the free name released billing:account:0")
	}

	// Bounded: with 2 SCAN calls of 10 keys, among 300 keys, the search
	// stops short and says so.
	defer func(count int64, calls int) { hintCount, hintCalls = count, calls }(hintCount, hintCalls)
	hintCount, hintCalls = 10, 2
	for i := range 300 {
		srv.Do("SET", "filler:"+strconv.Itoa(i), "x")
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "zzz"),
		`^no lock "zzz"; none found under another -prefix in the keys looked at \(the search stops after 2 SCAN calls or 2s\)$`)
	if h := inspectJSON(t, srv, "zzz").PrefixHint; h == nil || h.Complete || len(h.Found) != 0 {
		t.Errorf("-json prefix_hint of a search cut short: %+v", h)
	}
}

// globMatch matches as Redis' SCAN MATCH does: each pattern is run by the
// server over keys of every sort of byte a name holds.
func TestGlobMatch(t *testing.T) {
	srv := redistest.Start(t)
	keys := []string{"", "a", "ab", "abc", "a*c", "a?c", "a[c", "a]c", `a\c`, "a-c", "b", "abcabc", "x:account:0",
		"account:0", "account:10", "job[1]", "A", "a^c", "{a}", "a}c", "aXc", "ac"}
	patterns := []string{"*", "a*", "*c", "a?c", "a\\*c", "a[bc]*", "a[^b]c", "a[a-c]c", "a[c-a]c", "a[\\]]c",
		"a[\\\\]c", "*account:[0-9]", "job\\[1\\]", "job[1]", "a[", "a[b", "[", "\\", "a\\", "**", "a**c", "?", "",
		"a[-]c", "a[^]c", "*a*b*c*", "[A-Z]", "a[]c", "{a}", "a}c"}
	for _, k := range keys {
		if k != "" {
			srv.Do("SET", k, "1")
		}
	}
	for _, p := range patterns {
		want := map[string]bool{}
		var cursor string = "0"
		for {
			res, err := srv.Do("SCAN", cursor, "MATCH", p, "COUNT", "1000").ToArray()
			if err != nil {
				t.Fatal(err)
			}
			cursor, _ = res[0].ToString()
			found, _ := res[1].AsStrSlice()
			for _, k := range found {
				want[k] = true
			}
			if cursor == "0" {
				break
			}
		}
		for _, k := range keys {
			if k == "" {
				continue
			}
			if got := globMatch(p, k); got != want[k] {
				t.Errorf("globMatch(%q, %q) = %v; Redis says %v", p, k, got, want[k])
			}
		}
	}
	for _, name := range keys {
		if !globMatch(escapeGlob(name), name) || (name != "" && globMatch(escapeGlob(name), name+"x")) {
			t.Errorf("escapeGlob(%q) = %q matches otherwise than %q alone", name, escapeGlob(name), name)
		}
	}
}
