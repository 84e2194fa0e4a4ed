package leasehold_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// The table of kinds, lua.Kinds, is what every part reads of a kind: a
// lease of each kind is observed under its row's name, every row is a kind
// users can make (its package exists, and the suite's holdKinds take a lease
// of it), and the lists users read (the observer's Event.Lock, otel's
// lock.kind attribute) name exactly the table's kinds. Adding a kind fails
// here until each of them knows it (docs/architecture.md, "Adding a kind").
func TestKindsTable(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	c := locktest.Open(t, srv, leasehold.WithObserver(lease.ObserverFunc(func(e lease.Event) {
		if e.Kind == lease.Acquired {
			mu.Lock()
			seen[e.Lock] = true
			mu.Unlock()
		}
	})))
	for i, k := range holdKinds {
		h := k.acquire(t, c, "kinds-"+strconv.Itoa(i))
		locktest.Release(t, h.lease)
	}
	var names []string
	for _, k := range lua.Kinds {
		names = append(names, k.Name)
		if !seen[k.Name] {
			t.Errorf("no lease of kind %q was observed: holdKinds (lost_test.go) lacks it, or it reports another name", k.Name)
		}
		if _, err := os.Stat(k.Package); err != nil {
			t.Errorf("kind %q: no package %s/", k.Name, k.Package)
		}
	}
	for name := range seen {
		if !slices.Contains(names, name) {
			t.Errorf("a lease was observed as %q, which is not in lua.Kinds", name)
		}
	}
	for _, doc := range []struct{ file, from, to string }{
		{"lease/observer.go", "// Lock is the kind of lock:", "Lock  string"},
		{"docs/otel.md", "`leasehold.lock.kind` (the event's `Lock`:", ")"},
	} {
		listed := quotedKinds(t, doc.file, doc.from, doc.to)
		if !slices.Equal(listed, names) {
			t.Errorf("%s lists the kinds %v; lua.Kinds has %v", doc.file, listed, names)
		}
	}
}

// quotedKinds returns the kinds named in file between the first from and
// the to after it, in order: words quoted with " or ` or set apart by commas.
func quotedKinds(t *testing.T, file, from, to string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), from)
	if !ok {
		t.Fatalf("%s: no %q", file, from)
	}
	list, _, _ := strings.Cut(rest, to)
	var kinds []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return strings.ContainsRune(" ,\"`\n/():", r) }) {
		for _, k := range lua.Kinds {
			if f == k.Name {
				kinds = append(kinds, f)
			}
		}
	}
	return kinds
}
