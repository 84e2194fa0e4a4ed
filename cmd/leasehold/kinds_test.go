package main

import (
	"testing"

	"github.com/leasehold/leasehold/internal/lua"
)

// Every kind of lock (lua.Kinds) is one inspect describes, and one the
// release command can force-release (a semaphore's permits are released
// by their holders only, and the command says so).
func TestEveryKindDescribed(t *testing.T) {
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
