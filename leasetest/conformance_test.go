package leasetest_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/conformance"
	"github.com/leasehold/leasehold/leasetest"
)

// The kit is held to the assertions the library's suite makes of a real
// Redis (internal/harness/conformance): every kind, waiters woken by a
// release, leases running out on the wall clock, a removal heard within a
// second, lease.Do.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Suite{NewServer: func(t *testing.T) conformance.Server {
		return kitServer{leasetest.NewServer(t)}
	}})
}

// kitServer is the kit's Server as the conformance suite takes it.
type kitServer struct{ *leasetest.Server }

func (s kitServer) Raw(t *testing.T) rueidis.Client { return rawClient(t, s.Server) }
