package fence

import (
	"strconv"
	"strings"
	"sync"
)

// recordKey is the key of the last token applied to key, in key's Redis
// Cluster slot: leasehold_fence:{KEY}, or leasehold_fence:KEY when KEY has a
// hash tag (as script.KeysOf derives a lock's keys). A KEY whose braces make
// no hash tag ("a{}b", "a}b") would hash elsewhere either way; its record is
// leasehold_fence:{TAG}:KEY, TAG the shortest decimal string of KEY's slot.
func recordKey(key string) string {
	open := strings.IndexByte(key, '{')
	switch {
	case open < 0 && !strings.Contains(key, "}"):
		return "leasehold_fence:{" + key + "}"
	case open >= 0 && hasTag(key[open+1:]):
		return "leasehold_fence:" + key
	}
	return "leasehold_fence:{" + slotTag(slot(key)) + "}:" + key
}

// hasTag reports whether rest, what follows a key's first '{', makes a hash
// tag: a '}' after at least one byte.
func hasTag(rest string) bool { return strings.IndexByte(rest, '}') > 0 }

// slot is Redis Cluster's slot of key: CRC16 (XMODEM) of its hash tag, or
// of the whole key, mod 16384.
func slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// slotTags[s] is the first decimal string in slot s, computed on first use
// (about 100k CRCs, a few milliseconds), only for keys with odd braces.
var slotTags = sync.OnceValue(func() *[16384]string {
	var tags [16384]string
	for i, left := 0, len(tags); left > 0; i++ {
		s := strconv.Itoa(i)
		if sl := slot(s); tags[sl] == "" {
			tags[sl] = s
			left--
		}
	}
	return &tags
})

func slotTag(s uint16) string { return slotTags()[s] }
