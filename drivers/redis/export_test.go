package redis

// Hooks for the external tests of this package.

// KeyNames returns the Redis names used for key.
func KeyNames(key string) (lock, fence, channel string) {
	ks := keysFor(key)
	return ks.lock, ks.fence, ks.channel
}

// Waiters is how many waiting requests of d wait for key.
func Waiters(d *Driver, key string) int {
	d.hub.mu.Lock()
	defer d.hub.mu.Unlock()
	q := d.hub.queues[keysFor(key).channel]
	if q == nil {
		return 0
	}
	return len(q.waiters)
}

// Subscribed reports whether Redis has confirmed d's subscription for key.
func Subscribed(d *Driver, key string) bool {
	d.hub.mu.Lock()
	defer d.hub.mu.Unlock()
	q := d.hub.queues[keysFor(key).channel]
	return q != nil && q.confirmed
}

// SubscribedChannels is how many key channels d keeps subscribed.
func SubscribedChannels(d *Driver) int { return d.hub.subscribedChannels() }

// Queued is how many calls of d wait for the batch that will send them.
func Queued(d *Driver) int {
	if d.batch == nil {
		return 0
	}
	d.batch.mu.Lock()
	defer d.batch.mu.Unlock()
	return len(d.batch.queue)
}

// Slot is a name's Redis Cluster hash slot, as the driver computes it.
func Slot(name string) uint16 { return slot(name) }
