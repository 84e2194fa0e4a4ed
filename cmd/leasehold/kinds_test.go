package main

import (
	"testing"

	"github.com/leasehold/leasehold/internal/lua"
)

// Every kind of lock (lua.Kinds), and every other shape a key may have, is
// one inspect describes; every kind is one the release command can
// force-release (a semaphore's permits are released by their holders only,
// and the command says so).
func TestEveryKindDescribed(t *testing.T) {
	for sh := lua.ShapeFree; sh <= lua.ShapeNotLock; sh++ {
		if describe[sh] == "" {
			t.Errorf("inspect has no description of the shape %v", sh)
		}
	}
	for _, k := range lua.Kinds {
		if describe[k.Shape] == "" {
			t.Errorf("kind %q: inspect has no description of its shape %v", k.Name, k.Shape)
		}
		if k.Shape == lua.ShapeSemaphore {
			continue
		}
		if forceReleaser(k.Shape, "x") == nil {
			t.Errorf("kind %q: the release command cannot force-release its shape %v", k.Name, k.Shape)
		}
	}
}
