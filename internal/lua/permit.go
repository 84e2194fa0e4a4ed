package lua

import (
	"crypto/sha1"
	"encoding/binary"
	"strconv"
	"strings"
)

// NonExpiring is the expiry Redisson gives a permit taken without a lease
// time (its nonExpirableTimeout): such a permit is held until released.
const NonExpiring = 922337203685477

// MaxPermits is the most permits a semaphore may hold available either way,
// 2^53 - 1: the scripts count NAME in Lua's numbers, doubles, which are
// exact up to there (semaphore_max in script/lua/lib/semaphore.lua), and
// INCRBY cannot overflow it. A NAME beyond it is refused as corrupt.
const MaxPermits = 1<<53 - 1

// MaxPermitsPerLease is the most permits one leasehold lease holds: a permit
// id keeps 2 bytes for the permit's index in its lease.
const MaxPermitsPerLease = 1 << 16

// PermitPrefix is the first 14 bytes of the permit ids of the leasehold
// lease owner (CLIENT_ID:LEASE_ID): the first 8 bytes of the Client's UUID,
// then the lease number as 6 big-endian bytes. Permit i of the lease
// (0-based) is the prefix and i as 2 big-endian bytes (PermitID): 16 raw
// bytes, as Redisson's ids are, which Java's API names by their hex (its
// release(permitId) takes leasehold's ids too). An owner of another shape
// gets the first 14 bytes of its SHA-1.
func PermitPrefix(owner string) string {
	var b [16]byte
	client, lease, ok := strings.Cut(owner, ":")
	seq, err := strconv.ParseUint(lease, 10, 64)
	if !ok || err != nil || !uuidPrefix(b[:8], client) {
		sum := sha1.Sum([]byte(owner))
		return string(sum[:14])
	}
	binary.BigEndian.PutUint64(b[8:], seq<<16) // the low 48 bits, then 2 zero bytes
	return string(b[:14])
}

// uuidPrefix decodes the first len(dst) bytes of the hex digits of uuid,
// dashes skipped, into dst; false when uuid has too few, or other runes.
func uuidPrefix(dst []byte, uuid string) bool {
	n := 0
	var hi byte
	for i := 0; i < len(uuid) && n < 2*len(dst); i++ {
		c := uuid[i]
		var v byte
		switch {
		case c == '-':
			continue
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return false
		}
		if n%2 == 0 {
			hi = v
		} else {
			dst[n/2] = hi<<4 | v
		}
		n++
	}
	return n == 2*len(dst)
}

// PermitID is the id of permit i (0-based) of the leasehold lease owner:
// 16 raw bytes (see PermitPrefix).
func PermitID(owner string, i int) string {
	return PermitPrefix(owner) + string([]byte{byte(i >> 8), byte(i)})
}
