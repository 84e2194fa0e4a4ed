// Package keyslot is Redis Cluster's rule for a key's slot, for the code that
// derives keys (the engine checks that a lock's keys share one slot; package
// fence puts a key's token record in the key's slot).
package keyslot

import "strings"

// Hashed is the part of key that Redis Cluster hashes to find its slot: what
// the first '{' and the first '}' after it enclose, when that is not empty;
// else the whole key.
func Hashed(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Of is key's slot: CRC16 (XMODEM) of Hashed(key), mod 16384.
func Of(key string) uint16 {
	key = Hashed(key)
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
