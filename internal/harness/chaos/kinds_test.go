package chaos

import (
	"testing"

	"github.com/leasehold/leasehold/internal/lua"
)

// workerKinds is the worker's kind for each kind of lua.Kinds, or why the
// fault suite has none: a new kind fails TestEveryKindFaulted until it is
// one of them.
var workerKinds = map[string]string{
	lua.KindRLock.Name:     KindRLock,
	lua.KindFair.Name:      KindFair,
	lua.KindRWWrite.Name:   KindRW,
	lua.KindSemaphore.Name: KindSemaphore,
	lua.KindElection.Name:  KindElection,
	// Readers share the lock: there is no exclusion among them to check,
	// and a reader excludes writers through the same hash the writer's
	// sections are checked on.
	lua.KindRWRead.Name: "",
}

// Every kind of lock runs under the faults, or says why it does not.
func TestEveryKindFaulted(t *testing.T) {
	for _, k := range lua.Kinds {
		if _, ok := workerKinds[k.Name]; !ok {
			t.Errorf("kind %q: no worker kind in the fault suite (workerKinds)", k.Name)
		}
	}
}
