package event_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/event"
)

// A goroutine waits on a channel until another connection (another service)
// publishes on it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	h := event.NewHub(rc)
	defer h.Close()

	w, err := h.Watch(ctx, "latch:{jobs}:done", "")
	if err != nil {
		log.Fatal(err)
	}
	defer w.Leave()

	// Subscribed once Watch returns: this message is not missed.
	other, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	if err := other.Do(ctx, other.B().Publish().Channel("latch:{jobs}:done").Message("0").Build()).Error(); err != nil {
		log.Fatal(err)
	}

	select {
	case <-w.C():
		fmt.Println("woken")
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	}
	// Output: woken
}
