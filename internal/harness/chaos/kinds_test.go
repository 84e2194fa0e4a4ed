package chaos

import (
	"slices"
	"testing"

	"github.com/leasehold/leasehold/internal/lua"
)

// workerKinds is the worker's kind for each kind of lua.Kinds and for a
// partition group's memberships (lua.KindMember, no row of lua.Kinds), or
// why the fault suite has none: a new kind fails TestEveryKindFaulted
// until it is one of them.
var workerKinds = map[string]string{
	lua.KindRLock.Name:     KindRLock,
	lua.KindFair.Name:      KindFair,
	lua.KindRWWrite.Name:   KindRW,
	lua.KindSemaphore.Name: KindSemaphore,
	lua.KindElection.Name:  KindElection,
	lua.KindMember.Name:    KindPartition,
	// Readers share the lock: there is no exclusion among them to check,
	// and a reader excludes writers through the same hash the writer's
	// sections are checked on.
	lua.KindRWRead.Name: "",
}

// Every kind of lock, and a partition group, runs under the faults, or
// says why it does not; and every row of workerKinds is such a kind.
func TestEveryKindFaulted(t *testing.T) {
	kinds := append(slices.Clone(lua.Kinds), lua.KindMember)
	for _, k := range kinds {
		if _, ok := workerKinds[k.Name]; !ok {
			t.Errorf("kind %q: no worker kind in the fault suite (workerKinds)", k.Name)
		}
	}
	for name := range workerKinds {
		if !slices.ContainsFunc(kinds, func(k *lua.Kind) bool { return k.Name == name }) {
			t.Errorf("workerKinds: %q is no kind", name)
		}
	}
}
