package redislimit

import (
	"strings"

	"github.com/sluicehq/sluice/ratelimit"
)

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// keySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// hash tag (the text between the first '{' and the next '}', if not
// empty), or of the whole key, modulo 16384.
func keySlot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return crc16(key) % slotCount
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// sameSlot rejects requests whose keys map to different cluster slots: one
// script may only touch keys of one slot. Keys built by a ratelimit.Limiter
// share the subject's hash tag and always pass.
func sameSlot(keys []string, reqs []ratelimit.Request) error {
	first := keySlot(keys[0])
	for i := 1; i < len(keys); i++ {
		if s := keySlot(keys[i]); s != first {
			return ratelimit.InvalidArgument("Request.Key",
				"must share one Redis Cluster slot across a decision: %q (limit %s) is in slot %d but %q (limit %s) is in slot %d; put the shared part in one {hash tag}",
				reqs[i].Key, reqs[i].Limit, s, reqs[0].Key, reqs[0].Limit, first)
		}
	}
	return nil
}
