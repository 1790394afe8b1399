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
// lock name ends in "}" or in K while the fence name ends in ":fence".
type keyspace struct {
	lock    string // the owner token, with the lock's TTL
	fence   string // the last fence handed out, never expires
	channel string // where a release of this key is published
	shared  string // where a release of a shared key's grant is published
}

// sharedSuffix ends a shared key's channel.
const sharedSuffix = ":shared"

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
		channel: tagged + ":released",
		shared:  tagged + sharedSuffix,
	}
}
