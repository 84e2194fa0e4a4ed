package leasehold_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// quiet keeps a Client's warnings (Redis gone) out of the test's log.
var quiet = leasehold.WithObserver(lease.ObserverFunc(func(lease.Event) {}))

// healthProbe sends one request to h over HTTP, as a prober does, and returns the
// status, the body and the response's headers.
func healthProbe(t *testing.T, h http.Handler, method string) (int, string, http.Header) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client()
	client.Timeout = 20 * time.Second // longer than any bound of HealthHandler's
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body), res.Header
}

// HealthHandler answers GET and HEAD with 200 "ok" while Check is nil, and
// 503 with Check's error when Redis is gone (killed: the connection is
// refused) and after Close; HEAD with no body; other methods with 405.
func TestHealthHandler(t *testing.T) {
	srv := redistest.Start(t)
	c, err := leasehold.Open(srv.Option(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.HealthHandler()

	code, body, hdr := healthProbe(t, h, http.MethodGet)
	if code != http.StatusOK || body != "ok\n" || hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("GET, healthy: %d %q (Cache-Control %q), want 200 \"ok\\n\", no-store", code, body, hdr.Get("Cache-Control"))
	}
	if code, body, _ := healthProbe(t, h, http.MethodHead); code != http.StatusOK || body != "" {
		t.Errorf("HEAD, healthy: %d %q, want 200 and no body", code, body)
	}
	code, body, hdr = healthProbe(t, h, http.MethodPost)
	if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %q (Allow %q), want 405, Allow: GET, HEAD", code, body, hdr.Get("Allow"))
	}

	srv.Kill()
	code, body, _ = healthProbe(t, h, http.MethodGet)
	if want := "leasehold: check: Redis does not answer PING: "; code != http.StatusServiceUnavailable || !strings.HasPrefix(body, want) {
		t.Errorf("GET, Redis killed: %d %q, want 503 %s...", code, body, want)
	}
	if code, body, _ := healthProbe(t, h, http.MethodHead); code != http.StatusServiceUnavailable || body != "" {
		t.Errorf("HEAD, Redis killed: %d %q, want 503 and no body", code, body)
	}

	srv.Restart()
	var last string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body, _ := healthProbe(t, h, http.MethodGet)
		if code == http.StatusOK {
			break
		}
		last = body
		if time.Now().After(deadline) {
			t.Fatalf("not healthy within 10s of Redis' restart: %d %q", code, last)
		}
	}

	c.Close()
	code, body, _ = healthProbe(t, h, http.MethodGet)
	if want := "leasehold: check: lease: client closed: client " + c.ID() + "\n"; code != http.StatusServiceUnavailable || body != want {
		t.Errorf("GET after Close: %d %q, want 503 %q", code, body, want)
	}
}

// HealthHandler bounds its Check by 2s: a Redis that accepts and never
// answers (paused) gets 503 with the deadline, not a request that hangs as
// long as the prober waits; and by the request's context when it ends
// sooner.
func TestHealthHandlerBound(t *testing.T) {
	srv := redistest.Start(t)
	opt := srv.Option()
	// rueidis gives up on a silent server after its write timeout: long
	// here, so that only the handler's bound ends the Check in time.
	opt.ConnWriteTimeout = time.Minute
	c, err := leasehold.Open(opt, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.HealthHandler()

	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	code, body, _ := healthProbe(t, h, http.MethodGet)
	took := time.Since(start)
	// 2s, and generous room on a busy machine above it: a handler without
	// a bound of its own waits past the 20s after which healthProbe fails
	// the test.
	if code != http.StatusServiceUnavailable || !strings.Contains(body, context.DeadlineExceeded.Error()) ||
		took < 2*time.Second || took > 15*time.Second {
		t.Errorf("GET, Redis paused: %d %q after %v, want 503 and the deadline after 2s", code, body, took)
	}

	// A request whose context has ended: Check ends with it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil).WithContext(ctx))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), context.Canceled.Error()) {
		t.Errorf("GET with its context ended: %d %q, want 503 and the request's cancellation", rec.Code, rec.Body)
	}
}
