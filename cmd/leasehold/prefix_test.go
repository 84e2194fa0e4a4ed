package main

import (
	"context"
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
