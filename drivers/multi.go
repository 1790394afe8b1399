package drivers

// MaxMultiKeys is the most keys one Request takes.
const MaxMultiKeys = 64

// Busy is the key that kept a Request from taking its keys, and what the
// backend tells of that key's holder.
type Busy struct {
	Key string
	HeldBy
}

// ChangeWatcher is the optional capability of telling when a key may have
// changed hands (a grant, a release, an expiry), so that an observer
// reads it again then rather than on a timer.
//
// Changed returns a channel closed at the next change the backend sees of
// key, or of any key for a backend that cannot tell them apart, and stop,
// to call once when the caller no longer watches. The caller takes it
// before reading the key, so that a change after the read is not missed,
// and takes a new one after each change. A backend may miss some changes
// (SQLite does not see a lease run out until something is written): the
// observer still reads on a timer, less often.
//
// Fallback when a driver lacks it: the observer reads on its timer only.
type ChangeWatcher interface {
	Changed(key string) (changed <-chan struct{}, stop func())
}
