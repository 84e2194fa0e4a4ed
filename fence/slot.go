package fence

import (
	"strconv"
	"strings"
	"sync"

	"github.com/leasehold/leasehold/internal/keyslot"
)

// recordKey is the key of the last token applied to key, in key's Redis
// Cluster slot: leasehold_fence:{KEY}, or leasehold_fence:KEY when KEY has a
// hash tag (as script.KeysOf derives a lock's keys). A KEY whose braces make
// no hash tag ("a{}b", "a}b") would hash elsewhere either way; its record is
// leasehold_fence:{TAG}:KEY, TAG the shortest decimal string of KEY's slot.
func recordKey(key string) string {
	switch {
	case keyslot.Hashed(key) != key: // a hash tag
		return "leasehold_fence:" + key
	case !strings.ContainsAny(key, "{}"):
		return "leasehold_fence:{" + key + "}"
	}
	return "leasehold_fence:{" + slotTag(keyslot.Of(key)) + "}:" + key
}

// slotTags[s] is the first decimal string in slot s, computed on first use
// (about 100k CRCs, a few milliseconds), only for keys with odd braces.
var slotTags = sync.OnceValue(func() *[16384]string {
	var tags [16384]string
	for i, left := 0, len(tags); left > 0; i++ {
		s := strconv.Itoa(i)
		if sl := keyslot.Of(s); tags[sl] == "" {
			tags[sl] = s
			left--
		}
	}
	return &tags
})

func slotTag(s uint16) string { return slotTags()[s] }
