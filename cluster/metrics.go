package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/buildinfo"
)

// metrics are the node's Prometheus series, labelled node=<ID>.
type metrics struct {
	gatherer   prometheus.Gatherer
	registerer prometheus.Registerer
	collectors []prometheus.Collector

	acquireWait   prometheus.Histogram // request to grant, on the leader
	holdTime      prometheus.Histogram // grant to release/expiry, in FSM time
	contention    prometheus.Counter   // acquires answered 409
	expired       prometheus.Counter   // expiries applied
	leaderChanges prometheus.Counter

	// grants remembers when each held key was granted, for holdTime. Only
	// the FSM goroutine touches it.
	grants map[string]grantStart
}

type grantStart struct {
	fence uint64
	at    int64
}

func newMetrics(n *Node) (*metrics, error) {
	var reg prometheus.Registerer = n.cfg.Registry
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
	m := &metrics{
		gatherer:   gatherer,
		registerer: prometheus.WrapRegistererWith(prometheus.Labels{"node": n.cfg.ID}, reg),
		grants:     map[string]grantStart{},
	}
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	m.acquireWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zerotal_lock_acquire_wait_seconds", Help: "Time from an acquire request reaching the leader to its grant.", Buckets: buckets,
	})
	m.holdTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zerotal_lock_hold_seconds", Help: "Time a lock was held, grant to release or expiry, in replicated time.", Buckets: buckets,
	})
	m.contention = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zerotal_lock_contention_total", Help: "Acquires answered 409 because another owner held the key.",
	})
	m.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zerotal_lock_expired_total", Help: "Locks lost by their holder because their TTL ran out (expiries applied).",
	})
	m.leaderChanges = prometheus.NewCounter(prometheus.CounterOpts{
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
		m.acquireWait, m.holdTime, m.contention, m.expired, m.leaderChanges,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_waiters", Help: "Acquires queued in the replicated wait queues.",
		}, func() float64 { return float64(n.fsm.WaiterCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_keys", Help: "Keys in the lock table.",
		}, func() float64 { return float64(n.fsm.Engine().Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "zerotal_lock_raft_state", Help: "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
		}, func() float64 {
			// Read through an atomic: a shared registry may be scraped
			// while NewNode is still starting raft.
			if r := n.raftForMetrics.Load(); r != nil {
				return float64(r.State())
			}
			return float64(raft.Shutdown)
		}),
		newRaftCollector(n),
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

func (m *metrics) unregister() {
	for _, c := range m.collectors {
		m.registerer.Unregister(c)
	}
}

// observeApplied records hold times and expiries from the applied log.
func (m *metrics) observeApplied(a fsm.Applied) {
	e, r := a.Entry, a.Result
	switch e.Op {
	case engine.OpAcquire:
		if r.OK {
			if g, ok := m.grants[e.Key]; !ok || g.fence != r.Grant.Fence {
				m.grants[e.Key] = grantStart{fence: r.Grant.Fence, at: e.Now}
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
	if h := r.Handoff; h != nil {
		m.grants[h.Key] = grantStart{fence: h.Fence, at: e.Now}
	}
}
