// Command quickstart is the quick start of README.md: take a lock, work
// while holding it, stop if it is lost, release it. main.go is the part the
// README shows; this file finds it a Redis.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/leasehold/leasehold/internal/redistest"
)

func main() {
	log.SetFlags(0)
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

// withRedis runs f against $REDIS_ADDR, or against a redis-server it starts
// for the run and stops after it.
func withRedis(f func(ctx context.Context, addr string) error) error {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		srv, err := redistest.Launch()
		if err != nil {
			return fmt.Errorf("no REDIS_ADDR, and no redis-server to start: %w", err)
		}
		defer srv.Stop()
		addr = srv.Addr()
		fmt.Printf("started redis-server on %s\n", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f(ctx, addr)
}
