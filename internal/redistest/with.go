package redistest

import (
	"fmt"
	"os"
)

// WithRedis runs f against the Redis at $REDIS_ADDR or, when that is unset,
// against a redis-server it launches for the run, says so on stdout, and
// stops after f returns (so a program that fails still stops its server).
// The examples' main functions use it.
func WithRedis(f func(addr string) error) error {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		srv, err := Launch()
		if err != nil {
			return fmt.Errorf("no REDIS_ADDR, and no redis-server to start: %w", err)
		}
		defer srv.Stop()
		addr = srv.Addr()
		fmt.Printf("started redis-server on %s\n", addr)
	}
	return f(addr)
}
