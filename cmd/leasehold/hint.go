package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
)

// A Client opened with leasehold.WithKeyPrefix(PREFIX) keeps its lock NAME
// at the key PREFIX+NAME: read without -prefix (or with another), the lock
// is free. So when a name is free, or a pattern matches no lock, the command
// looks for keys that end with it after some prefix, and names the -prefix
// that reads them. The search is bounded: a large database is not scanned
// to its end for a hint.
const (
	hintTime  = 2 * time.Second // the search takes no longer than this
	hintShown = 5               // locks found, enough to stop looking
)

// Variables, for a test to reach the bound with a few keys.
var (
	hintCount int64 = 1000 // keys SCAN looks at per call (its COUNT)
	hintCalls       = 100  // SCAN calls in all: about hintCalls*hintCount keys
)

// prefixHint is what the search for a name under other prefixes found.
type prefixHint struct {
	found    []prefixed // by name, at most hintShown
	complete bool       // every key was looked at
}

// prefixed is a lock found under another prefix: its key is prefix+NAME.
type prefixed struct {
	key, prefix string
	shape       lua.Shape
}

// lookElsewhere looks on every node for keys that end with what glob (a
// Redis glob) matches after a prefix other than the one given (-prefix), and
// returns those that the library's model reads as locks that keep says to
// show. It is bounded by hintCalls, hintTime and hintShown; an error (SCAN
// refused, the time up) ends the search, which is then not complete.
func (e env) lookElsewhere(ctx context.Context, glob string, keep func(lua.State) bool) *prefixHint {
	ctx, cancel := context.WithTimeout(ctx, hintTime)
	defer cancel()
	h := &prefixHint{complete: true}
	seen := map[string]bool{}
	calls := 0
	for _, node := range e.rc.Nodes() {
		var cursor uint64
		for {
			if calls == hintCalls || len(h.found) >= hintShown {
				h.complete = false
				break
			}
			calls++
			entry, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match("*"+glob).Count(hintCount).Build()).AsScanEntry()
			if err != nil {
				h.complete = false
				break
			}
			var keys []string
			for _, k := range entry.Elements {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
			states, err := lua.InspectAll(ctx, e.rc, keys)
			if err != nil {
				h.complete = false
				break
			}
			for _, s := range states {
				if p, ok := e.prefixOf(s.Name, glob); ok && keep(s) {
					h.found = append(h.found, prefixed{key: s.Name, prefix: p, shape: s.Shape})
				}
			}
			if cursor = entry.Cursor; cursor == 0 {
				break
			}
		}
	}
	slices.SortFunc(h.found, func(a, b prefixed) int { return strings.Compare(a.key, b.key) })
	h.found = h.found[:min(len(h.found), hintShown)]
	return h
}

// prefixOf is the prefix, other than -prefix's, after which key matches
// glob: the shortest, as a Client's prefix is put before the whole name.
func (e env) prefixOf(key, glob string) (string, bool) {
	for i := range len(key) + 1 {
		if key[:i] != e.prefix && globMatch(glob, key[i:]) {
			return key[:i], true
		}
	}
	return "", false
}

// isLock says whether inspect hints at a lock of shape s: a lock or a
// semaphore, not a counter, fence's record or another key.
func isLock(s lua.State) bool {
	switch s.Shape {
	case lua.ShapeFree, lua.ShapeNotLock, lua.ShapeCounter, lua.ShapeFence:
		return false
	}
	return true
}

// text is the hint as the command says it after "no lock NAME" or "no locks
// match PATTERN": the locks found and the -prefix that reads them; "" when
// there is nothing to say (or h is nil: not looked for).
func (h *prefixHint) text() string {
	if h == nil {
		return ""
	}
	if len(h.found) == 0 {
		if h.complete {
			return ""
		}
		return fmt.Sprintf("; none found under another -prefix in the keys looked at (the search stops after %d SCAN calls or %v)", hintCalls, hintTime)
	}
	var keys, flags []string
	for _, p := range h.found {
		keys = append(keys, fmt.Sprintf("%q (%s)", p.key, p.shape))
		flag := "no -prefix"
		if p.prefix != "" {
			flag = "-prefix " + p.prefix
		}
		if !slices.Contains(flags, flag) {
			flags = append(flags, flag)
		}
	}
	return fmt.Sprintf("; found %s: did you mean %s?", strings.Join(keys, ", "), strings.Join(flags, " or "))
}

// escapeGlob is name as a Redis glob that matches name alone.
func escapeGlob(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globMatch reports whether s matches the Redis glob pattern as SCAN's
// MATCH does (Redis' stringmatchlen): * any bytes, ? one byte, [abc], [^a],
// [a-z], and \ quoting the next byte.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := range len(s) + 1 {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		case '[':
			if len(s) == 0 {
				return false
			}
			rest, ok := matchClass(pattern[1:], s[0])
			if !ok {
				return false
			}
			pattern = rest
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
		}
		pattern, s = pattern[1:], s[1:]
	}
	return len(s) == 0
}

// matchClass matches c against the class that starts pattern (after its
// '['), and returns pattern from the class's closing ']' (or its last byte,
// for a class that never closes, as Redis reads one).
func matchClass(pattern string, c byte) (string, bool) {
	not := len(pattern) > 0 && pattern[0] == '^'
	if not {
		pattern = pattern[1:]
	}
	match := false
	for {
		switch {
		case len(pattern) == 0:
			// Unclosed: Redis steps back onto the last byte.
			return "]", match != not
		case pattern[0] == '\\' && len(pattern) >= 2:
			pattern = pattern[1:]
			match = match || pattern[0] == c
		case pattern[0] == ']':
			return pattern, match != not
		case len(pattern) >= 3 && pattern[1] == '-':
			lo, hi := pattern[0], pattern[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (c >= lo && c <= hi)
			pattern = pattern[2:]
		default:
			match = match || pattern[0] == c
		}
		pattern = pattern[1:]
	}
}
