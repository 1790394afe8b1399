package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/zerotal/lock/bench/load"
)

// targets are the ratios lockcluster must reach against etcd.
var targets = map[string]float64{"spread": 5, "hot": 10, "serial": 2}

func main() {
	duration := flag.Duration("duration", 10*time.Second, "measured time per scenario and system")
	warmup := flag.Duration("warmup", time.Second, "unmeasured time before each measurement")
	etcdBin := flag.String("etcd", "etcd", "etcd binary")
	repo := flag.String("repo", "../..", "root of the zerotal lock repository (lockcluster is built from it)")
	lockBin := flag.String("lockcluster", "", "a built lockcluster binary (default: build it from -repo)")
	keep := flag.Bool("keep", false, "keep the temp dir with the data and logs")
	parent := flag.String("dir", "", "make the temp dir (data of both clusters) under this directory (default: $TMPDIR)")
	flag.Parse()
	if *duration <= 0 || *duration > 10*time.Minute || *warmup < 0 {
		fmt.Fprintln(os.Stderr, "need 0 < -duration <= 10m and -warmup >= 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := benchMain(ctx, *duration, *warmup, *etcdBin, *repo, *lockBin, *parent, *keep)
	stop()
	os.Exit(code)
}

func benchMain(ctx context.Context, duration, warmup time.Duration, etcdBin, repo, lockBin, parent string, keep bool) int {
	dir, err := os.MkdirTemp(parent, "zerotal-bench-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if keep {
		fmt.Fprintln(os.Stderr, "data and logs in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if lockBin == "" {
		if lockBin, err = buildLockcluster(repo, dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	for _, sub := range []string{"etcd", "lockcluster"} {
		if err := os.MkdirAll(dir+"/"+sub, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	ec, err := startEtcd(ctx, etcdBin, dir+"/etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ec.stop()
	lc, err := startLockcluster(ctx, lockBin, dir+"/lockcluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lc.stop()

	fmt.Printf("three-member etcd %s (concurrency.Mutex, one session per worker) vs three-node lockcluster (client, AcquireWait+Release)\n", ec.version)
	fmt.Printf("each row: %s measured after %s warm-up; one cycle = acquire (waiting) + release; data under %s\n\n", duration, warmup, dir)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsystem\tcycles/s\tacquire p50\tacquire p99\trelease p50\trelease p99\terrors\tratio\ttarget\t")
	failed := false
	for _, sc := range scenarios {
		var base float64
		for _, sys := range []struct {
			name string
			l    locker
		}{{"etcd", ec}, {"lockcluster", lc}} {
			if ctx.Err() != nil {
				return 1
			}
			r, err := run(ctx, sys.l, sc, warmup, duration)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", sc.name, sys.name, err)
				return 1
			}
			if r.FirstErr != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %d errors, first: %v\n", sc.name, sys.name, r.Errors, r.FirstErr)
			}
			ratio, target := "", ""
			if sys.name == "etcd" {
				base = r.PerSecond()
			} else if base > 0 {
				x := r.PerSecond() / base
				ratio = fmt.Sprintf("%.1fx", x)
				want := targets[sc.name]
				ok := x >= want
				cond := fmt.Sprintf(">= %.0fx", want)
				if sc.name == "hot" {
					ok = ok && load.Percentile(r.Acquire, 50) <= 10*time.Millisecond
					cond += ", p50 <= 10ms"
				}
				target = cond + map[bool]string{true: " ok", false: " MISSED"}[ok]
				failed = failed || !ok
			}
			fmt.Fprintf(os.Stderr, "%s %s: %.0f cycles/s\n", sc.name, sys.name, r.PerSecond())
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", sc.name, sys.name, r.PerSecond(),
				fmtDur(load.Percentile(r.Acquire, 50)), fmtDur(load.Percentile(r.Acquire, 99)),
				fmtDur(load.Percentile(r.Release, 50)), fmtDur(load.Percentile(r.Release, 99)), r.Errors, ratio, target)
		}
	}
	_ = tw.Flush()
	if failed {
		return 3
	}
	return 0
}
