// Command crawler crawls a site with an errgroup of workers spread over
// three processes, never more than -limit fetches in flight across all of
// them: each fetch holds a permit of one semaphore, "crawler:site".
//
// It starts itself again as three crawler processes, each with -workers
// goroutines, and serves the "site" they crawl itself: a local HTTP server
// that hands out the pages to fetch (GET /next), takes -fetch to answer each
// one (GET /page/N) and counts the fetches in flight, so that the bound is
// measured where it matters, at the site. Each crawler opens a Client with a
// short watchdog lease (-ttl), sets the semaphore's permits if nobody has
// (TrySetPermits), and in each worker loops: take a page, Acquire a permit,
// fetch, Release.
//
// Once the crawl is under way the supervisor kills crawler 1 with SIGKILL
// while it has a fetch in flight. It cannot release: its permit is lost to
// the others until its lease runs out in Redis, at most -ttl later, when the
// next attempt of a waiting worker gives it back (a waiter sleeps until the
// earliest permit expiry, it does not poll). The site gives the pages the
// dead crawler had taken to the others.
//
// It exits non-zero if the site ever saw more than -limit fetches at once,
// if the dead crawler's permit did not come back in time, or if a page was
// not fetched.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/crawler
//	go run ./examples/crawler -limit 5 -pages 200 -ttl 3s
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/semaphore"
)

var (
	limit   = flag.Int("limit", 3, "fetches in flight at most, across every crawler: the semaphore's permits")
	workers = flag.Int("workers", 4, "worker goroutines per crawler process")
	pages   = flag.Int("pages", 60, "pages to crawl")
	fetch   = flag.Duration("fetch", 100*time.Millisecond, "how long the site takes to answer a page")
	ttl     = flag.Duration("ttl", time.Second, "the watchdog lease: how long a dead crawler keeps its permits")
	// Set when the supervisor starts a crawler.
	crawler  = flag.Int("crawler", 0, "run as crawler `N` (the supervisor sets it)")
	addrFlag = flag.String("addr", "", "Redis address of a crawler (the supervisor sets it)")
	siteFlag = flag.String("site", "", "the site's URL, for a crawler (the supervisor sets it)")
)

// name is the semaphore every crawler shares.
const name = "crawler:site"

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *crawler > 0 {
		if err := crawl(*crawler, *addrFlag, *siteFlag); err != nil {
			log.Fatalf("crawler %d: %v", *crawler, err)
		}
		return
	}
	if err := withRedis(supervise); err != nil {
		log.Fatal(err)
	}
}

// crawl is one crawler process: an errgroup of workers that take pages from
// the site and fetch each under a permit.
func crawl(id int, addr, site string) error {
	ctx := context.Background()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}}, leasehold.WithWatchdog(*ttl))
	if err != nil {
		return err
	}
	defer c.Close()
	s := semaphore.New(c, name)
	// Whoever comes first sets the total; the others find it set.
	if _, err := s.TrySetPermits(ctx, *limit); err != nil {
		return err
	}
	web := &http.Client{Timeout: time.Minute}
	var fetched int
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	for range *workers {
		g.Go(func() error {
			for {
				page, ok, err := get(ctx, web, site+"/next", id)
				if err != nil || !ok {
					return err // ok false: every page is fetched
				}
				l, err := s.Acquire(ctx) // waits for a permit
				if err != nil {
					return err
				}
				_, _, err = get(l.Context(), web, site+"/page/"+page, id)
				if rerr := l.Release(context.Background()); err == nil {
					err = rerr
				}
				if err != nil {
					return err
				}
				mu.Lock()
				fetched++
				mu.Unlock()
			}
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Printf("fetched %d pages\n", fetched)
	return nil
}

// get fetches url as crawler id and returns the body; ok is false when the
// site has nothing more to give (204).
func get(ctx context.Context, web *http.Client, url string, id int) (body string, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("X-Crawler", strconv.Itoa(id))
	resp, err := web.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", false, err
	case resp.StatusCode == http.StatusNoContent:
		return "", false, nil
	case resp.StatusCode != http.StatusOK:
		return "", false, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), true, nil
}

// site is the crawled site: the frontier of pages to fetch, and the fetches
// in flight, counted as they arrive.
type site struct {
	mu       sync.Mutex
	changed  *sync.Cond
	queue    []int        // pages not handed out yet
	taken    map[int]int  // page -> the crawler it was handed to
	done     map[int]bool // pages fetched
	inflight map[int]int  // crawler -> fetches in flight
	total    int          // fetches in flight
	most     int          // the most in flight at once
}

func newSite(n int) *site {
	s := &site{taken: map[int]int{}, done: map[int]bool{}, inflight: map[int]int{}}
	s.changed = sync.NewCond(&s.mu)
	for p := range n {
		s.queue = append(s.queue, p)
	}
	return s
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.Header.Get("X-Crawler"))
	if r.URL.Path == "/next" {
		s.next(w, r, id)
		return
	}
	page, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/page/"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.inflight[id]++
	s.total++
	s.most = max(s.most, s.total)
	s.changed.Broadcast()
	s.mu.Unlock()
	select {
	case <-time.After(*fetch):
	case <-r.Context().Done(): // the crawler went away mid-fetch
	}
	s.mu.Lock()
	s.inflight[id]--
	s.total--
	if r.Context().Err() == nil {
		s.done[page] = true
	}
	s.changed.Broadcast()
	s.mu.Unlock()
	fmt.Fprintf(w, "page %d\n", page)
}

// next hands out the next page, waiting while every page left is taken by
// a crawler that may yet fetch it; 204 once every page is fetched.
func (s *site) next(w http.ResponseWriter, r *http.Request, id int) {
	stop := context.AfterFunc(r.Context(), func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && len(s.done) < *pages && r.Context().Err() == nil {
		s.changed.Wait()
	}
	if len(s.queue) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	page := s.queue[0]
	s.queue = s.queue[1:]
	s.taken[page] = id
	fmt.Fprint(w, page)
}

// lose gives the pages crawler id had taken and not fetched to the others.
func (s *site) lose(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for page, by := range s.taken {
		if by == id && !s.done[page] {
			delete(s.taken, page)
			s.queue = append(s.queue, page)
		}
	}
	s.changed.Broadcast()
}

// await waits until cond holds of the site, or d passes.
func (s *site) await(d time.Duration, cond func(*site) bool) bool {
	timer := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond(s) {
		if !time.Now().Before(deadline) {
			return false
		}
		s.changed.Wait()
	}
	return true
}

func supervise(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the whole run
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	st := newSite(*pages)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: st}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String()

	const crawlers = 3
	procs := make(map[int]*exec.Cmd)
	exited := make(chan error, crawlers)
	defer func() { // on failure, leave no crawler behind
		for _, p := range procs {
			_ = p.Process.Kill()
		}
	}()
	for id := 1; id <= crawlers; id++ {
		cmd := exec.Command(exe, "-crawler", strconv.Itoa(id), "-addr", addr, "-site", url,
			"-limit", strconv.Itoa(*limit), "-workers", strconv.Itoa(*workers), "-ttl", ttl.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		procs[id] = cmd
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fmt.Printf("crawler %d: %s\n", id, sc.Text())
			}
			exited <- cmd.Wait()
		}()
	}
	fmt.Printf("supervisor: %d crawler processes, %d workers each, at most %d fetches in flight; %d pages\n",
		crawlers, *workers, *limit, *pages)

	var failed []string
	if !st.await(20*time.Second, func(s *site) bool { return s.inflight[1] > 0 && s.total == *limit }) {
		return errors.New("crawler 1 never had a fetch in flight while the others filled the permits")
	}
	st.mu.Lock()
	held := st.inflight[1]
	st.mu.Unlock()
	fmt.Printf("supervisor: kill -9 crawler 1 with %d of the %d fetches in flight; it cannot release\n", held, *limit)
	killed := time.Now()
	_ = procs[1].Process.Kill()
	<-exited
	delete(procs, 1)
	st.lose(1)
	// Its fetches end with its connections at once, but its permits stay
	// taken in Redis until their lease runs out: until then the others
	// have fewer. Back to the limit means they came back.
	if !st.await(*ttl+5*time.Second, func(s *site) bool { return s.inflight[1] == 0 && s.total == *limit }) {
		return fmt.Errorf("the killed crawler's permits did not come back within %v (lease %v)", *ttl+5*time.Second, *ttl)
	}
	took := time.Since(killed)
	fmt.Printf("supervisor: its permits came back %v after the kill (lease %v): %d fetches in flight again\n",
		took.Round(10*time.Millisecond), *ttl, *limit)
	if took > *ttl+2*time.Second {
		failed = append(failed, fmt.Sprintf("permits came back %v after the kill, lease %v", took, *ttl))
	}

	for range crawlers - 1 {
		select {
		case err := <-exited:
			if err != nil {
				failed = append(failed, fmt.Sprintf("a crawler failed: %v", err))
			}
		case <-ctx.Done():
			return errors.New("the crawl did not end within a minute")
		}
	}
	procs = nil
	st.mu.Lock()
	fetched, most := len(st.done), st.most
	st.mu.Unlock()
	fmt.Printf("site: %d of %d pages fetched, at most %d in flight at once\n", fetched, *pages, most)
	if most > *limit {
		failed = append(failed, fmt.Sprintf("%d fetches in flight at once, limit %d", most, *limit))
	}
	if fetched != *pages {
		failed = append(failed, fmt.Sprintf("%d of %d pages fetched", fetched, *pages))
	}
	if len(failed) > 0 {
		return errors.New("FAILED: " + strings.Join(failed, "; "))
	}
	fmt.Printf("ok: never more than %d fetches in flight, and the killed crawler's permits came back\n", *limit)
	return nil
}
