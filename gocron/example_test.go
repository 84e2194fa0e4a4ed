package leaseholdgocron_test

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	leaseholdgocron "github.com/leasehold/leasehold/gocron"
	"github.com/leasehold/leasehold/lease"
)

// Two replicas schedule the same job at the same moment; it runs on one. The
// other's Lock finds the lock taken (held, or kept by WithHoldAtLeast if the
// run was over) and gocron skips its run.
func ExampleNewLocker() {
	var (
		mu      sync.Mutex
		ran     int
		skipped []error
		tried   sync.WaitGroup
	)
	tried.Add(2)
	for range 2 { // each replica: its Client, its scheduler
		c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(
			leaseholdgocron.NewLocker(c, leasehold.WithHoldAtLeast(time.Minute))))
		if err != nil {
			log.Fatal(err)
		}
		_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
			gocron.NewTask(func() { mu.Lock(); ran++; mu.Unlock() }),
			gocron.WithName("nightly-report"),
			gocron.WithEventListeners(
				gocron.AfterJobRuns(func(uuid.UUID, string) { tried.Done() }),
				gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
					mu.Lock()
					skipped = append(skipped, err)
					mu.Unlock()
					tried.Done()
				})))
		if err != nil {
			log.Fatal(err)
		}
		s.Start()
		defer s.Shutdown()
	}
	tried.Wait()
	fmt.Printf("ran %d time, skipped %d time\n", ran, len(skipped))
	fmt.Println("skipped as not acquired:", errors.Is(skipped[0], lease.ErrNotAcquired))
	// Output:
	// ran 1 time, skipped 1 time
	// skipped as not acquired: true
}
