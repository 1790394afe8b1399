// Package naiveactor is the baseline the in-process benchmarks measure
// against: a lock table owned by one goroutine, served over an unbuffered
// channel with a new reply channel per call, no batching, no TTL, and a
// busy key retried (spun on) rather than queued. It is what a first
// channel-actor lock looks like; the engine and the Manager are reported
// as ratios to it in the same run.
package naiveactor

import "sync"

type request struct {
	acquire    bool
	key, owner string
	reply      chan bool
}

// Actor is the naive channel actor. Its methods are safe for concurrent use
// until Close.
type Actor struct {
	reqs chan request
	done chan struct{}
	wg   sync.WaitGroup
}

// New starts an actor.
func New() *Actor {
	a := &Actor{reqs: make(chan request), done: make(chan struct{})}
	a.wg.Add(1)
	go a.run()
	return a
}

func (a *Actor) run() {
	defer a.wg.Done()
	m := map[string]string{}
	for {
		select {
		case r := <-a.reqs:
			ok := false
			if r.acquire {
				if _, busy := m[r.key]; !busy {
					m[r.key] = r.owner
					ok = true
				}
			} else if m[r.key] == r.owner {
				delete(m, r.key)
				ok = true
			}
			r.reply <- ok
		case <-a.done:
			return
		}
	}
}

func (a *Actor) call(acquire bool, key, owner string) bool {
	reply := make(chan bool, 1)
	a.reqs <- request{acquire: acquire, key: key, owner: owner, reply: reply}
	return <-reply
}

// TryAcquire takes key for owner if it is free.
func (a *Actor) TryAcquire(key, owner string) bool { return a.call(true, key, owner) }

// WaitAcquire retries TryAcquire until it succeeds.
func (a *Actor) WaitAcquire(key, owner string) {
	for !a.call(true, key, owner) {
	}
}

// Release frees key if owner holds it.
func (a *Actor) Release(key, owner string) bool { return a.call(false, key, owner) }

// Close stops the actor's goroutine.
func (a *Actor) Close() { close(a.done); a.wg.Wait() }
