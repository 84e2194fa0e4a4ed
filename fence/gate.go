package fence

import (
	"net/http"
	"strconv"
	"sync"
)

// Header is the HTTP header that carries a request's fencing token, in
// decimal.
const Header = "Fencing-Token"

// SetHeader sets h's Header to token, for a request to a fenced service.
func SetHeader(h http.Header, token uint64) { h.Set(Header, strconv.FormatUint(token, 10)) }

// Gate fences the resources of one process: it keeps the highest token
// admitted for each resource (one entry per resource, kept for the Gate's
// life). The zero Gate is ready; a Gate is safe for concurrent use and must
// not be copied after first use.
type Gate struct {
	mu   sync.Mutex
	last map[string]*turn
}

// turn is one resource's highest token, and the mutex that Handler holds
// while a request on it runs.
type turn struct {
	mu    sync.Mutex
	token uint64
}

// Admit records token for resource unless a higher one was admitted, in
// which case it returns an error wrapping ErrStale. The caller makes Admit
// and its write one step, as Handler does: a write that runs after another
// request admitted a higher token is not fenced.
func (g *Gate) Admit(resource string, token uint64) error {
	t, err := g.turn("admit", resource, token)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.admit(resource, token)
}

// Handler admits each request's Header token for the resource that
// resource(r) names, and runs next for the admitted ones, one at a time per
// resource, so that a stale request cannot write after a newer one was
// admitted. It answers 409 Conflict to a stale token, and 400 Bad Request to
// a missing or malformed token (or token 0) and to an empty resource.
func (g *Gate) Handler(resource func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := resource(r)
		vs := r.Header.Values(Header)
		if len(vs) != 1 {
			http.Error(w, "fence: want one "+Header+" header, got "+strconv.Itoa(len(vs)), http.StatusBadRequest)
			return
		}
		token, err := strconv.ParseUint(vs[0], 10, 64)
		if err != nil {
			http.Error(w, "fence: "+Header+" "+strconv.Quote(vs[0])+" is not a token", http.StatusBadRequest)
			return
		}
		t, err := g.turn("admit", name, token)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if err := t.admit(name, token); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// turn returns resource's entry, made on first use, after checking the input.
func (g *Gate) turn(op, resource string, token uint64) (*turn, error) {
	if resource == "" {
		return nil, invalid(op, resource, "empty resource")
	}
	if err := checkToken(op, resource, token); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = make(map[string]*turn)
	}
	t := g.last[resource]
	if t == nil {
		t = &turn{}
		g.last[resource] = t
	}
	return t, nil
}

// admit raises t to token, or refuses it; t.mu is held.
func (t *turn) admit(resource string, token uint64) error {
	if token < t.token {
		return stale("admit", resource, token, t.token)
	}
	t.token = token
	return nil
}
