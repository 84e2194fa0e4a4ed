package dbtest_test

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/dbtest"
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
