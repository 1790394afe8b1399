package sqlite

// BusyWaits is how many times d paused because another connection held
// the database's write lock.
func (d *Driver) BusyWaits() int64 { return d.busyWaits.Load() }
