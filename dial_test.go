package leasehold_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Pins Open's errors against what it cannot use: each names the address and
// what went wrong, in terms of the rueidis option that governs it, and wraps
// what a caller may match. Before, a server that accepted and never answered
// gave "leasehold: open: context deadline exceeded" after 5s, whatever the
// dial timeout was called, and an HTTP port "leasehold: open: received
// unknown message type: 72".
func TestOpenSaysWhatWentWrong(t *testing.T) {
	locked := redistest.Start(t)
	if err := locked.Do("CONFIG", "SET", "requirepass", "s3cret").Error(); err != nil {
		t.Fatal(err)
	}
	free, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	closed := "127.0.0.1:" + strconv.Itoa(free)
	free, err = redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	closed2 := "127.0.0.1:" + strconv.Itoa(free)
	silent := listen(t, func(net.Conn) {})              // accepts, never answers
	hangup := listen(t, func(c net.Conn) { c.Close() }) // accepts, closes at once
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	webAddr := web.Listener.Addr().String()
	// A short dial timeout keeps the silent cases quick; rueidis' default is 5s.
	const short = 300 * time.Millisecond
	at := func(addr string) rueidis.ClientOption {
		return rueidis.ClientOption{InitAddress: []string{addr}, Dialer: net.Dialer{Timeout: short}}
	}
	for _, tt := range []struct {
		name string
		opt  func() rueidis.ClientOption
		says []string
		is   []error
		as   any // a pointer to what errors.As must find
	}{
		{"nothing listens", func() rueidis.ClientOption { return at(closed) },
			[]string{closed, "nothing listens"}, []error{syscall.ECONNREFUSED}, nil},
		{"several addresses", func() rueidis.ClientOption {
			return rueidis.ClientOption{InitAddress: []string{closed, closed2}}
		}, []string{"none of " + closed + ", " + closed2, "nothing listens"}, []error{syscall.ECONNREFUSED}, nil},
		{"no answer within the dial timeout", func() rueidis.ClientOption { return at(silent) },
			[]string{silent, "no answer to the handshake", "300ms", "ClientOption.Dialer.Timeout"},
			[]error{context.DeadlineExceeded}, nil},
		{"no answer within ConnWriteTimeout", func() rueidis.ClientOption {
			return rueidis.ClientOption{InitAddress: []string{silent}, ConnWriteTimeout: short}
		}, []string{silent, "no answer to the handshake", "300ms", "ClientOption.ConnWriteTimeout"},
			[]error{context.DeadlineExceeded, os.ErrDeadlineExceeded}, nil},
		{"hangs up", func() rueidis.ClientOption { return at(hangup) },
			[]string{hangup, "closed the connection", "ClientOption.TLSConfig"}, nil, nil},
		{"not a Redis", func() rueidis.ClientOption { return at(webAddr) },
			[]string{webAddr, "is not a Redis", "HTTP server"}, nil, nil},
		{"not TLS", func() rueidis.ClientOption {
			opt := at(webAddr)
			opt.TLSConfig = &tls.Config{}
			return opt
		}, []string{webAddr, "does not speak TLS", "ClientOption.TLSConfig"}, nil, new(tls.RecordHeaderError)},
		{"no TLS on a Redis", func() rueidis.ClientOption {
			opt := at(locked.Addr())
			opt.TLSConfig = &tls.Config{}
			return opt
		}, []string{locked.Addr(), "TLS handshake", "does not speak TLS", "300ms"}, []error{context.DeadlineExceeded}, nil},
		{"no password", func() rueidis.ClientOption { return at(locked.Addr()) },
			[]string{locked.Addr(), "asks for a password", "ClientOption.Password"},
			[]error{lease.ErrRedis}, new(*rueidis.RedisError)},
		{"wrong password", func() rueidis.ClientOption {
			opt := at(locked.Addr())
			opt.Password = "guess"
			return opt
		}, []string{locked.Addr(), "refused the credentials", "WRONGPASS"},
			[]error{lease.ErrRedis}, new(*rueidis.RedisError)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := leasehold.Open(tt.opt())
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			// Bound: the 300ms set, far below rueidis' 5s default, with room
			// for a loaded machine.
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("Open took %v", took)
			}
			msg := err.Error()
			var le *lease.Error
			if !strings.HasPrefix(msg, "leasehold: open: ") || errors.As(err, &le) {
				t.Errorf("%q: want it to begin \"leasehold: open: \", and no *lease.Error", msg)
			}
			for _, s := range tt.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("%q: want it to wrap %v", msg, target)
				}
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("%q: want it to wrap a %T", msg, tt.as)
			}
			t.Log(msg)
		})
	}
}

// listen starts a TCP listener on loopback that hands each connection to
// serve and keeps it open until the test ends; it returns the address.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
