package dbtest_test

import (
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/dbtest"
	"github.com/leasehold/leasehold/internal/harness/missing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each server answers on its port once started, and Stop (twice: it is
// idempotent) ends it and removes its directory; nothing of it is left.
func TestStartStop(t *testing.T) {
	for _, c := range []struct {
		name   string
		launch func() (*dbtest.Server, error)
	}{
		{"postgres", dbtest.LaunchPostgres},
		{"mariadb", dbtest.LaunchMariaDB},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.launch()
			if err != nil {
				missing.SkipOrFail(t, err)
				t.Fatal(err)
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				s.Stop()
				t.Fatalf("%s does not answer on %s: %v\n%s", c.name, addr, err, s.Log())
			}
			conn.Close()
			dir := s.Dir()
			s.Stop()
			s.Stop()
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still answers on %s after Stop", c.name, addr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s's directory %s is left after Stop: %v", c.name, dir, err)
			}
		})
	}
}

// A database that is not installed is a *missing.Server, which names it
// and what installs it, so that its tests skip (or fail, in CI) saying so;
// any other failure to start fails them. PostgreSQL is hidden here as a
// machine without it: LEASEHOLD_POSTGRES_BIN names a directory without it.
func TestNotInstalled(t *testing.T) {
	t.Setenv("LEASEHOLD_POSTGRES_BIN", t.TempDir())
	s, err := dbtest.LaunchPostgres()
	if err == nil {
		s.Stop()
		t.Fatal("LaunchPostgres started a server from an empty directory")
	}
	var m *missing.Server
	if !errors.As(err, &m) {
		t.Fatalf("LaunchPostgres without PostgreSQL: %v, not a *missing.Server", err)
	}
	if m.Name != "PostgreSQL" || m.Install == "" {
		t.Errorf("missing %q, installed by %q", m.Name, m.Install)
	}
	if _, err := dbtest.FindPostgres(); !errors.As(err, &m) {
		t.Errorf("FindPostgres without PostgreSQL: %v, not a *missing.Server", err)
	}
}
