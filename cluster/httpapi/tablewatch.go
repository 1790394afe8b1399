package httpapi

// TableWatcher is the Store's optional signal of a change anywhere in
// the lock table, which the live lock page (GET /ui/events) passes on;
// a Store without it serves the page without live updates (a reload
// shows the table as it is).
type TableWatcher interface {
	// TableChanged returns a channel closed at the next change of the
	// table as this node applies it, and stop, to call once the caller no
	// longer waits for it. Take it before reading the table, so that a
	// change made after the read is not missed.
	TableChanged() (changed <-chan struct{}, stop func())
}
