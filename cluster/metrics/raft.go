package metrics

import (
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// raftCollector exports one node's raft state, read from raft when
// scraped. raft's own metrics go through go-metrics' process-wide sink,
// which cannot tell the nodes of one process apart; this collector
// belongs to its node and is labelled with it like every node series.
type raftCollector struct {
	src Sources

	term, lastLogIndex, commitIndex, appliedIndex, fsmPending *prometheus.Desc
	lastSnapshotIndex, voters, lastContact, ready             *prometheus.Desc
}

var _ prometheus.Collector = (*raftCollector)(nil)

func newRaftCollector(src Sources) *raftCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("zerotal_lock_raft_"+name, help, nil, nil)
	}
	return &raftCollector{
		src:               src,
		term:              d("term", "Raft's current term."),
		lastLogIndex:      d("last_log_index", "Index of the last entry in this node's raft log."),
		commitIndex:       d("commit_index", "Highest raft log index this node knows to be committed."),
		appliedIndex:      d("applied_index", "Highest raft log index applied on this node (FSM and configuration)."),
		fsmPending:        d("fsm_pending", "Batches of committed entries queued for this node's FSM."),
		lastSnapshotIndex: d("last_snapshot_index", "Raft log index of this node's latest snapshot (0: none)."),
		voters:            d("voters", "Voters in the latest raft configuration this node knows."),
		lastContact: d("last_contact_seconds",
			"Time since this follower last heard from the leader; 0 on the leader; absent before any contact."),
		ready: prometheus.NewDesc("zerotal_lock_ready",
			"1 when /readyz answers 200 (this node knows a leader that has a quorum), else 0.", nil, nil),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.term, c.lastLogIndex, c.commitIndex, c.appliedIndex, c.fsmPending,
		c.lastSnapshotIndex, c.voters, c.lastContact, c.ready} {
		ch <- d
	}
}

// Collect reads raft's accessors and Stats, all of which take locks or
// atomics only (none waits for raft's main loop), so a scrape never
// blocks on a busy or stuck raft.
func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	// A shared registry may be scraped while the node is still starting
	// raft.
	r := c.src.Raft()
	if r == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	stats := r.Stats()
	for d, key := range map[*prometheus.Desc]string{
		c.term: "term", c.lastLogIndex: "last_log_index", c.commitIndex: "commit_index",
		c.appliedIndex: "applied_index", c.fsmPending: "fsm_pending", c.lastSnapshotIndex: "last_snapshot_index",
	} {
		if v, err := strconv.ParseUint(stats[key], 10, 64); err == nil {
			gauge(d, float64(v))
		}
	}
	if f := r.GetConfiguration(); f.Error() == nil {
		voters := 0
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
		}
		gauge(c.voters, float64(voters))
	}
	if r.State() == raft.Leader {
		gauge(c.lastContact, 0)
	} else if last := r.LastContact(); !last.IsZero() {
		gauge(c.lastContact, time.Since(last).Seconds())
	}
	ready := 0.0
	if c.src.Ready(r) {
		ready = 1
	}
	gauge(c.ready, ready)
}

// registerRuntimeCollectors adds the Go runtime (go_*) and process
// (process_*) collectors to a registry the node created itself. They
// describe the process, not the node, so they carry no node label; a
// registry passed in Config.Registry is the caller's to equip
// (prometheus.DefaultRegisterer has both already).
func registerRuntimeCollectors(reg *prometheus.Registry) error {
	// The process collector reports nothing where it cannot read the
	// process's figures (it reads /proc on Linux).
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
