package fence_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
)

func TestGateAdmit(t *testing.T) {
	var g fence.Gate
	steps := []struct {
		resource  string
		token     uint64
		wantStale bool
	}{
		{"a", 5, false},
		{"a", 5, false}, // the same holder again
		{"a", 4, true},
		{"b", 1, false}, // resources are apart
		{"a", 6, false},
		{"a", 5, true},
	}
	for _, s := range steps {
		err := g.Admit(s.resource, s.token)
		if errors.Is(err, fence.ErrStale) != s.wantStale {
			t.Fatalf("Admit(%s, %d): %v, want stale %v", s.resource, s.token, err, s.wantStale)
		}
	}
	for _, err := range []error{g.Admit("", 1), g.Admit("a", 0), g.Admit("a", 1<<63)} {
		if !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%v, want lease.ErrInvalid", err)
		}
	}
}

func TestGateHandler(t *testing.T) {
	var g fence.Gate
	var wrote []string
	h := g.Handler(func(r *http.Request) string { return r.URL.Path }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrote = append(wrote, r.URL.Path+"@"+r.Header.Get(fence.Header))
	}))
	tests := []struct {
		path   string
		header []string
		want   int
	}{
		{"/a", []string{"7"}, http.StatusOK},
		{"/a", []string{"7"}, http.StatusOK},
		{"/a", []string{"6"}, http.StatusConflict},
		{"/a", nil, http.StatusBadRequest},
		{"/a", []string{"x"}, http.StatusBadRequest},
		{"/a", []string{"-1"}, http.StatusBadRequest},
		{"/a", []string{"0"}, http.StatusBadRequest},
		{"/a", []string{"8", "9"}, http.StatusBadRequest},
		{"/b", []string{"1"}, http.StatusOK},
		{"/a", []string{"8"}, http.StatusOK},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPut, tt.path, nil)
		for _, v := range tt.header {
			r.Header.Add(fence.Header, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("PUT %s with %v: %d %s, want %d", tt.path, tt.header, w.Code, w.Body, tt.want)
		}
	}
	want := []string{"/a@7", "/a@7", "/b@1", "/a@8"}
	if len(wrote) != len(want) {
		t.Fatalf("next ran for %v, want %v", wrote, want)
	}
	for i := range want {
		if wrote[i] != want[i] {
			t.Fatalf("next ran for %v, want %v", wrote, want)
		}
	}
}

// Requests race on one resource with rising tokens: next never runs for a
// token lower than one it already ran for (the check and the write are one
// step), and SetHeader's header is what Handler reads.
func TestGateHandlerConcurrent(t *testing.T) {
	var g fence.Gate
	var mu sync.Mutex
	high, order := uint64(0), 0
	srv := httptest.NewServer(g.Handler(func(*http.Request) string { return "r" }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strconv.ParseUint(r.Header.Get(fence.Header), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		if tok < high {
			order++
		}
		high = max(high, tok)
	})))
	defer srv.Close()
	var wg sync.WaitGroup
	var codes sync.Map
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			fence.SetHeader(req.Header, uint64(1+i%10))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes.Store(resp.StatusCode, true)
		}()
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	if order > 0 {
		t.Errorf("next ran %d times for a token below one it had run for", order)
	}
	if _, ok := codes.Load(http.StatusOK); !ok {
		t.Error("no request admitted")
	}
}
