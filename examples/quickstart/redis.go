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
	"log"
	"time"

	"github.com/leasehold/leasehold/internal/redistest"
)

func main() {
	log.SetFlags(0)
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

// withRedis runs f against $REDIS_ADDR, or a redis-server started for the
// run and stopped after it (redistest.WithRedis), with a context bounding
// the whole run.
func withRedis(f func(ctx context.Context, addr string) error) error {
	return redistest.WithRedis(func(addr string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return f(ctx, addr)
	})
}
