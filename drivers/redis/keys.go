package redis

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// keyspace names the Redis keys and the pub/sub channel that belong to one
// lock key.
//
// Every name starts with the same hash tag, so that on Redis Cluster the
// lock key and its fence counter land in the same slot and one script can
// touch both (Redis rejects a script whose keys span slots). For a key
// without braces the tag is the key itself: "{K}" holds the owner,
// "{K}:fence" the fence counter. A key that contains "{" or "}" could
// otherwise end the tag early or leave it empty, so its tag is a digest
// instead: "{#<hex>}K". The two forms can never produce the same name (the
// first has exactly one pair of braces, the second at least two), and the
// lock name ends in "}" or in K while the others end in ":fence", ":q" and
// ":w". The channel is the lock name and ":released", which the scripts
// derive.
type keyspace struct {
	lock    string // the key's grants (scripts.go)
	fence   string // the last fence handed out, kept for FenceRetention
	queue   string // the waiting owners in their order
	places  string // each waiting owner's place
	channel string // where a release of this key is published
}

// names are the keys of a script about the key, in the order the scripts
// read them (KEYS[4i-3..4i]).
func (ks keyspace) names() []string { return []string{ks.lock, ks.fence, ks.queue, ks.places} }

func keysFor(key string) keyspace {
	var tagged string
	if strings.ContainsAny(key, "{}") {
		sum := sha256.Sum256([]byte(key))
		tagged = "{#" + hex.EncodeToString(sum[:12]) + "}" + key
	} else {
		tagged = "{" + key + "}"
	}
	return keyspace{
		lock:    tagged,
		fence:   tagged + ":fence",
		queue:   tagged + ":q",
		places:  tagged + ":w",
		channel: tagged + ":released",
	}
}

// oneSlot reports whether every name falls in the same Redis Cluster hash
// slot.
func oneSlot(names []string) bool {
	for _, n := range names[1:] {
		if slot(n) != slot(names[0]) {
			return false
		}
	}
	return true
}

// slot is a name's Redis Cluster hash slot: CRC16 (XMODEM) of its hash
// tag, or of the whole name when it has none, modulo 16384.
func slot(name string) uint16 {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if j := strings.IndexByte(name[i+1:], '}'); j > 0 {
			name = name[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(name); i++ {
		crc ^= uint16(name[i]) << 8
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
