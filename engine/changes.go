package engine

// Changed returns a channel closed at key's next change of holder (a
// grant, a release, an expiry or a hand-off of a mutex), and stop, to call
// once the caller no longer watches. Take it before reading the key, so
// that a change made after the read is not missed; take it again after
// each change. It is safe for concurrent use. It is what an election's
// observer waits for instead of asking again and again.
func (e *Engine) Changed(key string) (changed <-chan struct{}, stop func()) {
	return e.changes.Changed(key)
}
