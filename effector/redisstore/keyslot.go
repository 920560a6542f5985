package redisstore

import "strings"

// keySlot is Redis Cluster's key hash slot: CRC16 (XMODEM) mod 16384 of the
// key's hash tag, the bytes between its first "{" and the first "}" after
// that, or of the whole key if it has no "{", no "}" after it, or an empty
// tag.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % 16384
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
