package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/zerotal/lock/bench/load"
)

// target is what lockcluster must reach against etcd in one scenario.
type target struct {
	// ratio is the least lockcluster/etcd ratio of cycles/s.
	ratio float64
	// p50 is the most lockcluster's acquire p50 may be; 0: no bound.
	p50 time.Duration
}

// targets are lockcluster's targets against etcd, by scenario.
var targets = map[string]target{
	"spread": {ratio: 5},
	"hot":    {ratio: 15, p50: 5 * time.Millisecond},
	"serial": {ratio: 2, p50: 500 * time.Microsecond},
}

// options are the command's flags.
type options struct {
	duration, warmup, idle    time.Duration
	slices                    int
	etcdBin, repo, lockBin    string
	parent                    string
	keep                      bool
	profileDir                string
	etcdArgs, lockclusterArgs []string
}

func main() {
	var o options
	var etcdArgs, lockArgs, sizes, steps string
	var scale bool
	var so scaleOptions
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per scenario and system")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured time before each slice's measurement")
	flag.DurationVar(&o.idle, "idle", 2*time.Second, "how long to measure both clusters' CPU time at rest, before the scenarios (0: not at all)")
	flag.IntVar(&o.slices, "slices", 4, "slices each scenario's measured time is cut into, the systems alternating "+
		"(etcd first in even slices, lockcluster in odd ones) so that the machine's noise falls on both")
	flag.StringVar(&o.etcdBin, "etcd", "etcd", "etcd binary")
	flag.StringVar(&o.repo, "repo", "../..", "root of the zerotal lock repository (lockcluster is built from it)")
	flag.StringVar(&o.lockBin, "lockcluster", "", "a built lockcluster binary (default: build it from -repo)")
	flag.StringVar(&etcdArgs, "etcd-args", "", "more flags for every etcd member, space-separated (no quoting)")
	flag.StringVar(&lockArgs, "lockcluster-args", "", `more flags for every lockcluster agent, space-separated (no quoting), e.g. "--raft-log wal"`)
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir with the data and logs")
	flag.StringVar(&o.parent, "dir", "", "make the temp dir (data of both clusters) under this directory (default: $TMPDIR)")
	flag.BoolVar(&scale, "scale", false, "measure how the cost grows with the locks held, instead of the three scenarios (make bench-scale)")
	flag.StringVar(&sizes, "scale-sizes", "1000,20000,100000,1000000", "-scale: lockcluster's table sizes, held locks, comma-separated")
	flag.IntVar(&so.etcdHeld, "scale-etcd-held", 20_000, "-scale: the largest table etcd is measured at (a lease and a key per lock)")
	flag.DurationVar(&so.window, "scale-window", 5*time.Second, "-scale: measured time of each row")
	flag.IntVar(&so.workers, "scale-workers", 16, "-scale: workers cycling fresh keys beside the held locks")
	flag.StringVar(&o.profileDir, "scale-profile-dir", ".", "-scale with -lockcluster-args --pprof: where the leader's heap profile is saved")
	flag.IntVar(&so.clients, "scale-clients", 10_000, "-scale: clients, each its own connection to the leader, holding and refreshing a lock each")
	flag.DurationVar(&so.clientsFor, "scale-clients-for", 30*time.Second, "-scale: how long the clients refresh")
	flag.IntVar(&so.storm, "scale-storm", 100_000, "-scale: locks ending in the same second in the expiry storm")
	flag.StringVar(&steps, "scale-steps", "restart,leader,storm,clients", "-scale: what runs after the held rows, comma-separated, in this order: restart (a follower), leader (its death), storm (expiries), clients")
	flag.Parse()
	if scale {
		so.steps = map[string]bool{}
		for _, f := range strings.Split(steps, ",") {
			switch f = strings.TrimSpace(f); f {
			case "":
			case "restart", "leader", "storm", "clients":
				so.steps[f] = true
			default:
				fmt.Fprintf(os.Stderr, "-scale-steps: %q is none of restart, leader, storm, clients\n", f)
				os.Exit(2)
			}
		}
		for _, f := range strings.Split(sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "-scale-sizes: %q is not a positive count\n", f)
				os.Exit(2)
			}
			so.sizes = append(so.sizes, n)
		}
		if so.window <= 0 || so.workers < 1 || so.storm < 1 || so.etcdHeld < 1 || so.clients < 1 || so.clientsFor <= 0 {
			fmt.Fprintln(os.Stderr, "need -scale-window and -scale-clients-for > 0, and -scale-workers, -scale-storm, -scale-etcd-held and -scale-clients >= 1")
			os.Exit(2)
		}
	}
	if o.duration <= 0 || o.duration > 10*time.Minute || o.warmup < 0 || o.idle < 0 || o.slices < 1 || o.duration/time.Duration(o.slices) < 100*time.Millisecond {
		fmt.Fprintln(os.Stderr, "need 0 < -duration <= 10m, -warmup >= 0, -idle >= 0, -slices >= 1 and slices of at least 100ms")
		os.Exit(2)
	}
	o.etcdArgs, o.lockclusterArgs = strings.Fields(etcdArgs), strings.Fields(lockArgs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	prefix, run := "zerotal-bench-etcd-", func(dir string) int { return benchMain(ctx, o, dir) }
	if scale {
		prefix, run = "zerotal-bench-scale-", func(dir string) int { return scaleMain(ctx, o, so, dir) }
	}
	code := inTempDir(o, prefix, run)
	stop()
	os.Exit(code)
}

// inTempDir runs fn in a new directory under o.parent named after prefix,
// which it removes afterwards unless o.keep.
func inTempDir(o options, prefix string, fn func(dir string) int) int {
	dir, err := os.MkdirTemp(o.parent, prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "data and logs in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	return fn(dir)
}

// system is one side of the comparison.
type system struct {
	name string
	l    locker
}

func benchMain(ctx context.Context, o options, dir string) int {
	ec, lc, err := startSystems(ctx, o, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ec.stop()
	defer lc.stop()

	slice := o.duration / time.Duration(o.slices)
	fmt.Printf("three-member etcd %s (concurrency.Mutex, one session per worker) vs three-node lockcluster (client, AcquireWait+Release)\n", ec.version)
	fmt.Printf("settings: default configurations, both fsync every commit (etcd its WAL, lockcluster its raft log); extra flags: etcd %q, lockcluster %q\n",
		strings.Join(o.etcdArgs, " "), strings.Join(o.lockclusterArgs, " "))
	fmt.Printf("clients: etcd one clientv3.Client (gRPC, one connection per member) for all workers; lockcluster one client.Client (HTTP keep-alive pool, up to 512 idle connections per node)\n")
	fmt.Printf("each row: %s measured in %d slices of %s, etcd and lockcluster alternating, each slice after %s warm-up; %d CPUs; data under %s\n",
		o.duration, o.slices, slice, o.warmup, runtime.NumCPU(), dir)
	fmt.Printf("one cycle = acquire (waiting) + release; cpu/cycle = CPU time (user+system, /proc/PID/stat) of the three members plus this process's (getrusage: the clients) over the measured time, per cycle\n")

	systems := []system{{"etcd", ec}, {"lockcluster", lc}}
	if o.idle > 0 && !printIdle(ctx, systems, o.idle) {
		return 1
	}
	fmt.Println()
	rows, ok := measureAll(ctx, o, systems, slice)
	if !ok {
		return 1
	}
	printRows(systems, rows)
	if !printTargets(rows) {
		return 3
	}
	return 0
}

// startSystems builds lockcluster when no binary was given, and starts
// both three-member systems under dir; with an error, nothing is left
// running.
func startSystems(ctx context.Context, o options, dir string) (ec *etcdCluster, lc *lockCluster, err error) {
	lockBin := o.lockBin
	if lockBin == "" {
		if lockBin, err = buildLockcluster(o.repo, dir); err != nil {
			return nil, nil, err
		}
	}
	for _, sub := range []string{"etcd", "lockcluster"} {
		if err := os.MkdirAll(dir+"/"+sub, 0o700); err != nil {
			return nil, nil, err
		}
	}
	if ec, err = startEtcd(ctx, o.etcdBin, dir+"/etcd", o.etcdArgs); err != nil {
		return nil, nil, err
	}
	if lc, err = startLockcluster(ctx, lockBin, dir+"/lockcluster", o.lockclusterArgs); err != nil {
		ec.stop()
		return nil, nil, err
	}
	return ec, lc, nil
}

// printIdle prints what the members use with no client at work
// (heartbeats, the runtime): at low cycle rates it is a good part of
// cpu/cycle. It reports false when ctx ended first.
func printIdle(ctx context.Context, systems []system, idle time.Duration) bool {
	fmt.Printf("at rest (%s, no clients), CPU time per second of the members:", idle)
	before := make([]cpuReading, len(systems))
	for s, sys := range systems {
		before[s] = readCPU(sys.l.members())
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return false
	case <-time.After(idle):
	}
	wall := time.Since(start)
	var parts []string
	for s, sys := range systems {
		after := readCPU(sys.l.members())
		if before[s].err != nil || after.err != nil {
			parts = append(parts, sys.name+" n/a")
			continue
		}
		per := make([]string, len(after.members))
		for i := range after.members {
			per[i] = fmt.Sprintf("%.0f", float64(after.members[i]-before[s].members[i])/float64(time.Millisecond)/wall.Seconds())
		}
		parts = append(parts, sys.name+" "+strings.Join(per, "+")+"ms/s")
	}
	fmt.Println(" " + strings.Join(parts, ", "))
	return true
}

// measureAll runs every scenario on both systems in alternating slices;
// ok is false when ctx ended or a run failed.
func measureAll(ctx context.Context, o options, systems []system, slice time.Duration) (rows map[string][]measurement, ok bool) {
	rows = make(map[string][]measurement, len(scenarios))
	for _, sc := range scenarios {
		ms := make([]measurement, len(systems))
		for i := range o.slices {
			order := []int{0, 1}
			if i%2 == 1 {
				order = []int{1, 0}
			}
			for _, s := range order {
				if ctx.Err() != nil {
					return nil, false
				}
				m, err := run(ctx, systems[s].l, sc, o.warmup, slice)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s %s: %v\n", sc.name, systems[s].name, err)
					return nil, false
				}
				fmt.Fprintf(os.Stderr, "%s %s slice %d/%d: %.0f cycles/s\n", sc.name, systems[s].name, i+1, o.slices, m.PerSecond())
				ms[s].add(m)
			}
		}
		for s, m := range ms {
			if m.FirstErr != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %d errors, first: %v\n", sc.name, systems[s].name, m.Errors, m.FirstErr)
			}
			if m.cpuErr != nil {
				fmt.Fprintf(os.Stderr, "%s %s: CPU time not measured: %v\n", sc.name, systems[s].name, m.cpuErr)
			}
		}
		rows[sc.name] = ms
	}
	return rows, ctx.Err() == nil
}

// printRows prints the table of measurements, with lockcluster's ratio
// to etcd.
func printRows(systems []system, rows map[string][]measurement) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsystem\tcycles/s\tacquire p50\tacquire p99\trelease p50\trelease p99\terrors\tcpu/cycle\tmembers\tclient\tratio\t")
	for _, sc := range scenarios {
		ms := rows[sc.name]
		for s, m := range ms {
			ratio := ""
			if s == 1 && ms[0].PerSecond() > 0 {
				ratio = fmt.Sprintf("%.2fx", m.PerSecond()/ms[0].PerSecond())
			}
			total, members, client := "n/a", "n/a", "n/a"
			if m.cpuErr == nil && m.Cycles > 0 {
				total = fmt.Sprintf("%.0fµs", m.cpuPerCycle(m.servers()+m.client))
				per := make([]string, len(m.members))
				for i, d := range m.members {
					per[i] = fmt.Sprintf("%.0f", m.cpuPerCycle(d))
				}
				members = strings.Join(per, "+") + "µs"
				client = fmt.Sprintf("%.0fµs", m.cpuPerCycle(m.client))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", sc.name, systems[s].name, m.PerSecond(),
				fmtDur(load.Percentile(m.Acquire, 50)), fmtDur(load.Percentile(m.Acquire, 99)),
				fmtDur(load.Percentile(m.Release, 50)), fmtDur(load.Percentile(m.Release, 99)), m.Errors,
				total, members, client, ratio)
		}
	}
	_ = tw.Flush()
}

// printTargets prints each target's condition as measured; it reports
// whether all were met.
func printTargets(rows map[string][]measurement) bool {
	fmt.Println("\ntargets (lockcluster against etcd, this run):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tcondition\ttarget\tmeasured\tresult\tmargin\t")
	met := true
	for _, sc := range scenarios {
		ms, t := rows[sc.name], targets[sc.name]
		for _, c := range checks(ms[0], ms[1], t) {
			result := "met"
			if !c.met {
				result, met = "MISSED", false
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.0f%%\t\n", sc.name, c.what, c.target, c.measured, result, 100*c.margin)
		}
	}
	_ = tw.Flush()
	return met
}

// check is one condition of a target, as measured.
type check struct {
	what, target, measured string
	met                    bool
	// margin is how far the measurement is on the right side of the
	// target, as a fraction of it: +0.5 is half again the ratio needed, or
	// a p50 at half the bound; negative when missed.
	margin float64
}

// checks compares lockcluster (lc) with etcd (ec) against t.
func checks(ec, lc measurement, t target) []check {
	var ratio float64
	if ec.PerSecond() > 0 {
		ratio = lc.PerSecond() / ec.PerSecond()
	}
	cs := []check{{
		what: "cycles/s ratio", target: fmt.Sprintf(">= %gx", t.ratio), measured: fmt.Sprintf("%.2fx", ratio),
		met: ratio >= t.ratio, margin: ratio/t.ratio - 1,
	}}
	if t.p50 > 0 {
		p50 := load.Percentile(lc.Acquire, 50)
		cs = append(cs, check{
			what: "lockcluster acquire p50", target: "<= " + fmtDur(t.p50), measured: fmtDur(p50),
			met: lc.Cycles > 0 && p50 <= t.p50, margin: 1 - float64(p50)/float64(t.p50),
		})
	}
	return cs
}
