package metrics

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/buildinfo"
)

// Sources are what the series read when scraped. The funcs may be called
// from any goroutine, also before the node has finished starting.
type Sources struct {
	// ID labels every series node=<ID>.
	ID string
	// Registry receives the series; nil: a registry of its own, with the
	// Go runtime and process collectors (unlabelled).
	Registry prometheus.Registerer
	// Raft is the node's raft, nil until it runs.
	Raft func() *raft.Raft
	// Waiters and Keys count the replicated table's queued waiters and keys.
	Waiters, Keys func() int
	// Ready reports what /readyz would answer.
	Ready func(*raft.Raft) bool
}

// Metrics are one node's series. The request metrics are observed by the
// node's lock operations; ObserveApplied feeds the table's from the log.
type Metrics struct {
	// Gatherer serves /metrics.
	Gatherer prometheus.Gatherer

	AcquireWait   prometheus.Histogram // request to grant, on the leader
	Contention    prometheus.Counter   // acquires answered 409
	LeaderChanges prometheus.Counter

	registerer prometheus.Registerer
	collectors []prometheus.Collector
	holdTime   prometheus.Histogram // grant to release/expiry, in FSM time
	expired    prometheus.Counter   // expiries applied

	// grants remembers when each held key was granted, for holdTime. Only
	// the FSM goroutine touches it.
	grants map[string]grantStart
}

type grantStart struct {
	fence uint64
	at    int64
}

// New registers a node's series.
func New(src Sources) (*Metrics, error) {
	var reg prometheus.Registerer = src.Registry
	var gatherer prometheus.Gatherer = prometheus.DefaultGatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		if err := registerRuntimeCollectors(r); err != nil {
			return nil, err
		}
		reg, gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gatherer = g
	}
	m := &Metrics{
		Gatherer:   gatherer,
		registerer: prometheus.WrapRegistererWith(prometheus.Labels{"node": src.ID}, reg),
		grants:     map[string]grantStart{},
	}
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	m.AcquireWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zerotal_lock_acquire_wait_seconds", Help: "Time from an acquire request reaching the leader to its grant.", Buckets: buckets,
	})
	m.holdTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zerotal_lock_hold_seconds", Help: "Time a lock was held, grant to release or expiry, in replicated time.", Buckets: buckets,
	})
	m.Contention = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zerotal_lock_contention_total", Help: "Acquires answered 409 because another owner held the key.",
	})
	m.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zerotal_lock_expired_total", Help: "Locks lost by their holder because their TTL ran out (expiries applied).",
	})
	m.LeaderChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zerotal_lock_leadership_changes_total", Help: "Times this node gained or lost leadership.",
	})
	bi := buildinfo.Get()
	m.collectors = []prometheus.Collector{
		// The build, as labels on a constant 1 (the Prometheus build_info
		// convention), so a dashboard can join it onto any series by node.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_build_info", Help: "The node's build: version, VCS revision and Go version; always 1.",
			ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
		}, func() float64 { return 1 }),
		m.AcquireWait, m.holdTime, m.Contention, m.expired, m.LeaderChanges,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_waiters", Help: "Acquires queued in the replicated wait queues.",
		}, func() float64 { return float64(src.Waiters()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_keys", Help: "Keys in the lock table.",
		}, func() float64 { return float64(src.Keys()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_raft_state", Help: "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
		}, func() float64 {
			// A shared registry may be scraped while the node is still
			// starting raft.
			if r := src.Raft(); r != nil {
				return float64(r.State())
			}
			return float64(raft.Shutdown)
		}),
		newRaftCollector(src),
	}
	for i, c := range m.collectors {
		if err := m.registerer.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				m.registerer.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

// Unregister removes the node's series from the registry.
func (m *Metrics) Unregister() {
	for _, c := range m.collectors {
		m.registerer.Unregister(c)
	}
}

// ObserveApplied records hold times and expiries from the applied log. It
// runs on the FSM goroutine only.
func (m *Metrics) ObserveApplied(a fsm.Applied) {
	e, r := a.Entry, a.Result
	switch e.Op {
	case engine.OpAcquire, engine.OpAcquireKeys:
		// A key queued for has a zero Grant: it is timed from its hand-off.
		for _, g := range r.Grants {
			if t, ok := m.grants[g.Key]; g.Fence != 0 && (!ok || t.fence != g.Fence) {
				m.track(g.Key, g.Fence, e.Now)
			}
		}
	case engine.OpRelease, engine.OpForceRelease, engine.OpExpire:
		if r.OK {
			if g, ok := m.grants[e.Key]; ok {
				m.holdTime.Observe(time.Duration(e.Now - g.at).Seconds())
				delete(m.grants, e.Key)
			}
			if e.Op == engine.OpExpire {
				m.expired.Inc()
			}
		}
	}
	// A shared name's holders share its one start: the histogram times a
	// name from a grant to the end of a grant.
	for _, h := range r.Handoffs {
		m.track(h.Key, h.Fence, e.Now)
	}
}

// timedAll is how many held keys the hold-time histogram times all of;
// beyond it, it times a sample: the grants whose fence is a multiple of
// timedEvery. A fence says nothing of how long its grant is held, so the
// sample is a fair one, and a million held keys cost the map 1/64 of
// what timing each would (79 MB on every node, measured at 1 M).
const (
	timedAll   = 10_000
	timedEvery = 64
)

// track starts timing key's grant of fence, unless the sample leaves it
// out; a grant left out ends any earlier grant of key's timing.
func (m *Metrics) track(key string, fence uint64, at int64) {
	if len(m.grants) < timedAll || fence%timedEvery == 0 {
		m.grants[key] = grantStart{fence: fence, at: at}
		return
	}
	delete(m.grants, key)
}
