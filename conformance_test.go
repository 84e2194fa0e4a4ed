package leasehold_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/conformance"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// The behaviour the test kit is held to (internal/harness/conformance),
// on real redis-servers: the kit and Redis answer the same assertions.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Suite{NewServer: func(t *testing.T) conformance.Server {
		return redisServer{t: t, srv: redistest.Start(t)}
	}})
}

// redisServer is a redis-server of the harness as the conformance suite
// takes it.
type redisServer struct {
	t   *testing.T
	srv *redistest.Server
}

func (s redisServer) Open(opts ...leasehold.Option) *leasehold.Client {
	return locktest.Open(s.t, s.srv, opts...)
}

func (s redisServer) Raw(*testing.T) rueidis.Client { return s.srv.Client() }
