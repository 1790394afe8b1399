package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// runReport sums up one nemesis run.
type runReport struct {
	Duration    time.Duration            `json:"duration_ns"`
	Ops         map[string]int           `json:"ops"` // "acquire ok": count
	OpsTotal    int                      `json:"ops_total"`
	OpsKnown    int                      `json:"ops_completed"` // answered (ok or a definite no)
	Faults      map[faultKind]int        `json:"faults"`
	Recovery    map[faultKind]recoveryMS `json:"recovery_ms"`
	Unrecovered []string                 `json:"unrecovered,omitempty"`
	// LeaderChanged counts, per kind, the faults after which another node
	// led.
	LeaderChanged map[faultKind]int `json:"leader_changed"`
	// Handovers counts grants whose previous holder never released
	// (expiry under load); DurableHeld the durable grants found intact
	// after the full restart.
	Handovers   int `json:"expiry_handovers"`
	DurableHeld int `json:"durable_held_after_restart"`
	Violations  int `json:"violations"`
	// SharedGrants counts the grants of shared keys the checker judged, by
	// claim ("semaphore of 2", "read", "write").
	SharedGrants map[string]int `json:"shared_grants"`
	Porcupine    string         `json:"porcupine"`
	RSSStart     map[string]int `json:"rss_start_kib"`
	RSSEnd       map[string]int `json:"rss_end_kib"`
	RSSMax       map[string]int `json:"rss_max_kib"`
	// AnonStart and AnonEnd are the anonymous resident memory (heap and
	// stacks, without mapped files) at the same moments as RSSStart/End.
	AnonStart map[string]int `json:"anon_start_kib"`
	AnonEnd   map[string]int `json:"anon_end_kib"`
	// RSSQuarters is RSS a quarter, half and three quarters into the run.
	RSSQuarters map[string][3]int `json:"rss_quarters_kib"`
	// Failover is, for faults that take the leader away, the time until
	// the other nodes agreed on a new leader.
	Failover map[faultKind]recoveryMS `json:"failover_ms"`
	// Restarts counts each node's process restarts (its RSS starts over).
	Restarts map[string]int `json:"restarts"`
	// Untuned is what clients with the default configuration got done
	// during each kind of fault, beside their rate outside faults.
	Untuned untunedStats `json:"untuned_clients"`
}

// recoveryMS is the time from a fault's end (heal, restart, SIGCONT)
// until the next successful write, in milliseconds.
type recoveryMS struct {
	N   int   `json:"n"`
	P50 int64 `json:"p50"`
	Max int64 `json:"max"`
}

// isWrite reports whether o is a successful write (a grant, a refresh or
// a release that released).
func isWrite(o op) bool {
	return o.result == resOK && o.kind != opGet
}

// buildReport counts ops and faults and measures recovery after each
// fault from the history.
func buildReport(ops []op, faults []faultRecord) runReport {
	r := runReport{Ops: map[string]int{}, Faults: map[faultKind]int{}, Recovery: map[faultKind]recoveryMS{},
		LeaderChanged: map[faultKind]int{}, Restarts: map[string]int{}, Failover: map[faultKind]recoveryMS{}}
	var writeEnds []op
	for _, o := range ops {
		name := string(o.kind) + " " + string(o.result)
		if o.result == resUnknown && strings.HasPrefix(o.err, gaveUp) {
			name += " (" + gaveUp + ")"
		}
		r.Ops[name]++
		r.OpsTotal++
		if o.result != resUnknown {
			r.OpsKnown++
		}
		if isWrite(o) {
			writeEnds = append(writeEnds, o)
		}
		r.Duration = max(r.Duration, o.end)
	}
	failovers := map[faultKind][]time.Duration{}
	for _, f := range faults {
		if f.failover >= 0 {
			failovers[f.kind] = append(failovers[f.kind], f.failover)
			failovers["all"] = append(failovers["all"], f.failover)
		}
	}
	for k, ds := range failovers {
		r.Failover[k] = summarize(ds)
	}
	per := map[faultKind][]time.Duration{}
	var all []time.Duration
	for _, gs := range collectGrants(ops) {
		for i := 1; i < len(gs); i++ {
			if !releasedBy(gs[i-1]) {
				r.Handovers++
			}
		}
	}
	for _, f := range faults {
		r.Faults[f.kind]++
		r.Faults["all"]++
		switch f.kind {
		case faultKillLeader, faultKillFollower, faultRestart:
			r.Restarts[f.node]++
		case faultKillAll:
			for _, id := range []string{"n1", "n2", "n3"} {
				r.Restarts[id]++
			}
		}
		if f.leaderAfter != f.leaderBefore {
			r.LeaderChanged[f.kind]++
			r.LeaderChanged["all"]++
		}
		first := time.Duration(-1)
		for _, o := range writeEnds {
			if o.start >= f.end && (first < 0 || o.end < first) {
				first = o.end
			}
		}
		if first < 0 {
			r.Unrecovered = append(r.Unrecovered, fmt.Sprintf("%s of %s at %.3fs", f.kind, f.node, f.end.Seconds()))
			continue
		}
		per[f.kind] = append(per[f.kind], first-f.end)
		all = append(all, first-f.end)
	}
	for k, ds := range per {
		r.Recovery[k] = summarize(ds)
	}
	if len(all) > 0 {
		r.Recovery["all"] = summarize(all)
	}
	return r
}

// releasedBy reports whether g's owner sent a release.
func releasedBy(g *grant) bool {
	for _, o := range g.ops {
		if o.kind == opRelease {
			return true
		}
	}
	return false
}

func summarize(ds []time.Duration) recoveryMS {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return recoveryMS{N: len(ds), P50: ds[(len(ds)-1)/2].Milliseconds(), Max: ds[len(ds)-1].Milliseconds()}
}

// String renders the report as markdown.
func (r runReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis run of %v: %d operations, %d answered (ok or a definite no), %d unknown\n",
		r.Duration.Round(time.Second), r.OpsTotal, r.OpsKnown, r.OpsTotal-r.OpsKnown)
	fmt.Fprintf(&b, "violations: %d; porcupine: %s\n\n", r.Violations, r.Porcupine)
	b.WriteString("| operation | count |\n|---|---:|\n")
	for _, k := range sortedKeys(r.Ops) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, r.Ops[k])
	}
	fmt.Fprintf(&b, "\ngrants taken over after expiry (holder vanished or lost it): %d; durable grants intact after the full restart: %d\n",
		r.Handovers, r.DurableHeld)
	if len(r.SharedGrants) > 0 {
		fmt.Fprintf(&b, "grants of shared keys checked (never more than the limit, never a writer beside anyone): %v\n", r.SharedGrants)
	}
	b.WriteString("\nrecovery: from the fault's end (restart, SIGCONT, heal) to the next successful write; " +
		"failover: from the injection until the two other nodes agreed on a new leader\n\n")
	b.WriteString("| fault | injected | leader changed | recovery p50 | recovery max | failover p50 | failover max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range sortedKeys(r.Faults) {
		rec, fo := r.Recovery[k], "| - | - |"
		if f, ok := r.Failover[k]; ok {
			fo = fmt.Sprintf("| %d ms | %d ms |", f.P50, f.Max)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d ms | %d ms %s\n", k, r.Faults[k], r.LeaderChanged[k], rec.P50, rec.Max, fo)
	}
	if len(r.Unrecovered) > 0 {
		fmt.Fprintf(&b, "\nno successful write after: %s\n", strings.Join(r.Unrecovered, "; "))
	}
	fmt.Fprintf(&b, "\nuntuned clients (%d, default client.Config, %v per call): %.1f successful calls/s outside faults\n\n",
		untunedClients, untunedDeadline, r.Untuned.Baseline)
	b.WriteString("| fault | calls/s during | ratio to no fault | first ok after injection p50 | max |\n|---|---:|---:|---:|---:|\n")
	for _, k := range sortedKeys(r.Untuned.During) {
		f := r.Untuned.FirstOK[k]
		fmt.Fprintf(&b, "| %s | %.1f | %.2f | %d ms | %d ms |\n", k, r.Untuned.During[k], r.Untuned.Ratio[k], f.P50, f.Max)
	}
	b.WriteString("\n| node | RSS start | 25% | 50% | 75% | end | max | anon start | anon end | restarts |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range sortedKeys(r.RSSStart) {
		q := r.RSSQuarters[k]
		fmt.Fprintf(&b, "| %s | %d KiB | %d KiB | %d KiB | %d KiB | %d KiB | %d KiB | %d KiB | %d KiB | %d |\n",
			k, r.RSSStart[k], q[0], q[1], q[2], r.RSSEnd[k], r.RSSMax[k], r.AnonStart[k], r.AnonEnd[k], r.Restarts[k])
	}
	return b.String()
}

// JSON is the report for tools.
func (r runReport) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return b
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
