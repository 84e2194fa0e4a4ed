package leasehold

import (
	"context"
	"io"
	"net/http"
	"time"
)

// healthTimeout bounds each health request's Check: a Redis that does not
// answer fails the probe with the reason, rather than leaving the prober to
// give up on a request that hangs.
const healthTimeout = 2 * time.Second

// HealthHandler serves Check to health probes (a Kubernetes readiness probe,
// a load balancer's check): to GET and HEAD it answers 200 and "ok" while
// Check is nil, and 503 Service Unavailable and Check's error otherwise,
// after Close too; to other methods, 405. Each request's Check has 2s, less
// if the request's context ends sooner. docs/safety.md says which probe to
// give it.
func (c *Client) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "leasehold: health: method "+r.Method+" not allowed (GET or HEAD)", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		w.Header().Set("Cache-Control", "no-store") // a cached answer is no probe
		if err := c.Check(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
}
