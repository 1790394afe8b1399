package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Capabilities: Redis serves every request itself (scripts.go), a set of
// keys in one script, waiting or not, and a cap on total hold time, which
// the scripts keep with each grant and no refresh goes past. On Redis
// Cluster a set needs its keys in one hash slot, and Acquire refuses
// others as unsupported, having taken nothing; the Manager then takes
// them, or waits for them, one at a time.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}

// Acquire serves one request (drivers.Driver): a mutex, a semaphore's slot
// or a read/write lock's side of one key or of several, all or none, in
// one script (acquireScript), and with Wait its place in each busy key's
// queue until every key is granted (wait.go). The fence of a new grant is
// larger than every fence the key had before.
//
// On Redis Cluster a script may only touch one hash slot, and each key has
// a slot of its own (its name is its hash tag, see keysFor): keys that do
// not all fall in one slot get an error matching drivers.ErrUnsupported,
// having taken nothing, and the Manager takes them one at a time instead.
func (d *Driver) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	op := "acquire"
	if req.Wait {
		op = "wait for"
	}
	if err := d.usable(ctx, op, strings.Join(req.Keys, ",")); err != nil {
		return drivers.Grant{}, err // nothing sent, nothing to clean up
	}
	if err := d.after(ctx, op, req.Keys...); err != nil {
		return drivers.Grant{}, err
	}
	if req.Claim != (drivers.Claim{}) {
		if err := req.Claim.CheckShared(); err != nil {
			return drivers.Grant{}, err
		}
	}
	a := newAttempt(req)
	if len(req.Keys) == 1 && d.hub.waiting(keysFor(req.Keys[0]).channel) {
		a.busy()
	}
	if d.cluster && !oneSlot(a.names) {
		return drivers.Grant{}, fmt.Errorf("redis: acquire %q: the keys are in different hash slots of the cluster, which one script cannot take together: %w", req.Keys, drivers.ErrUnsupported)
	}
	if req.Wait {
		return d.wait(ctx, a)
	}
	r, err := d.try(ctx, a)
	if err != nil {
		return drivers.Grant{}, err
	}
	return r.grant(), nil
}

// attempt is a request as acquireScript takes it.
type attempt struct {
	req   drivers.Request
	names []string // keyspace.names of each key
	args  []any
}

func newAttempt(req drivers.Request) *attempt {
	a := &attempt{req: req, names: make([]string, 0, 4*len(req.Keys))}
	for _, k := range req.Keys {
		a.names = append(a.names, keysFor(k).names()...)
	}
	claim := ""
	if c := req.Claim; c != (drivers.Claim{}) {
		claim = strconv.Itoa(int(c.Kind)) + ":" + strconv.FormatUint(uint64(c.Limit), 10)
	}
	var maxHold int64 // no cap
	if req.MaxHold > 0 {
		maxHold = millis(req.MaxHold)
	}
	a.args = []any{req.Owner, millis(req.TTL), claim, flag(req.Claim.Write), flag(req.Wait), 0, 0, maxHold}
	return a
}

// again marks the later attempts of a wait, which may find the places the
// first one took (acquireScript's ARGV[6]), and whose key is busy.
func (a *attempt) again() {
	a.args[5] = 1
	a.busy()
}

// busy marks an attempt at a key this process knows to be contended (its
// own requests wait for it): the script goes straight to the key's state,
// sparing the check for a free key nobody waits for that would fail
// (acquireScript's ARGV[7]), a call of the eight a contended enqueue
// makes.
func (a *attempt) busy() { a.args[6] = 1 }

// reply is what one attempt came to.
type reply struct {
	granted bool
	fences  []uint64
	busy    drivers.Busy  // the key in the way, when not granted
	left    time.Duration // its first holder's time left; negative: none
	queued  bool          // the request keeps its places (Wait)
	head    bool          // first in the busy key's queue
}

func (r reply) grant() drivers.Grant {
	if r.granted {
		return drivers.Grant{Acquired: true, Fences: r.fences}
	}
	return drivers.Grant{Busy: r.busy}
}

// try runs acquireScript once.
func (d *Driver) try(ctx context.Context, a *attempt) (reply, error) {
	keys := a.req.Keys
	res, err := d.run(ctx, acquireScript, a.names, a.args...).Slice()
	if err != nil {
		return reply{}, d.translate(ctx, "acquire", strings.Join(keys, ","), err)
	}
	ints := make([]int64, len(res))
	for i, v := range res {
		ints[i], _ = v.(int64)
	}
	bad := func() error { return fmt.Errorf("redis: acquire %q: unexpected reply %v", keys, res) }
	switch {
	case len(ints) == len(keys)+1 && ints[0] == 1:
		r := reply{granted: true, fences: make([]uint64, len(keys))}
		for i := range keys {
			r.fences[i] = uint64(ints[i+1])
		}
		return r, nil
	case len(ints) < 2 || ints[1] < 1 || int(ints[1]) > len(keys):
		return reply{}, bad()
	}
	key := keys[ints[1]-1]
	switch {
	case ints[0] == -1 && len(res) == 3:
		claim, _ := res[2].(string)
		return reply{}, drivers.KindMismatch(key, heldAs(claim), a.req.Claim)
	case ints[0] == -2:
		return reply{}, &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds or waits for the other side of %q; release it first", key)}
	case ints[0] != 0 || len(res) != 7:
		return reply{}, bad()
	}
	r := reply{busy: drivers.Busy{Key: key}, left: time.Duration(ints[2]) * time.Millisecond, queued: ints[5] == 1, head: ints[6] == 1}
	if way, _ := res[3].(string); way != "" {
		r.busy.Holder = drivers.HolderOf(way)
		r.busy.TTL = max(time.Duration(ints[4])*time.Millisecond, 0)
	}
	return r, nil
}

// heldAs describes the claim a refused acquire met: "" is a mutex's,
// else "kind:limit".
func heldAs(claim string) string {
	kind, lim, _ := strings.Cut(claim, ":")
	k, _ := strconv.Atoi(kind)
	l, _ := strconv.ParseUint(lim, 10, 32)
	return drivers.Claim{Kind: drivers.Kind(k), Limit: uint32(l)}.Describe()
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
