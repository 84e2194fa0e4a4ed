package leasetest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/leasehold/leasehold"
)

// Server is an in-process Redis owned by one test, stopped when that test
// ends.
type Server struct {
	tb testing.TB
	mr *miniredis.Miniredis
}

// NewServer starts an empty in-process Redis on a free loopback port,
// stopped when the test (or benchmark) tb ends. Each call makes a server of
// its own: parallel tests do not share keys. It fails tb (Fatalf) when the
// server cannot listen.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		tb.Fatalf("leasetest: starting the in-process Redis: %v", err)
	}
	setUp(mr)
	tb.Cleanup(mr.Close)
	return &Server{tb: tb, mr: mr}
}

// Open returns a Client on s, closed when the test that made s ends; each
// call makes another Client, as another process would. opts come after the
// kit's defaults, so they win (see the package doc for those). It fails the
// test (Fatalf) when Open fails: call it from the test's goroutine.
func (s *Server) Open(opts ...leasehold.Option) *leasehold.Client {
	s.tb.Helper()
	c, err := leasehold.Open(clientOption(s.mr.Addr()), append(defaults(s.tb), opts...)...)
	if err != nil {
		s.tb.Fatalf("leasetest: %v", err)
	}
	s.tb.Cleanup(func() { c.Close() })
	return c
}

// Addr is the server's host:port, for a client of the test's own: with
// rueidis, set DisableCache, AlwaysRESP2 and ForceSingleClient, which the
// in-process server needs.
func (s *Server) Addr() string { return s.mr.Addr() }

// Open starts a Server for tb and returns a Client on it: NewServer(tb).Open(opts...).
func Open(tb testing.TB, opts ...leasehold.Option) *leasehold.Client {
	tb.Helper()
	return NewServer(tb).Open(opts...)
}
