package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSoak is the long nemesis run, off unless ZEROTAL_SOAK gives its
// length:
//
//	ZEROTAL_SOAK=10m go test -race -run TestSoak -timeout 0 ./integration/
//
// Faults of random kinds, with random holds and gaps, follow each other
// until the time is up; then every node is killed and restarted and the
// whole history is checked, as in the short run. ZEROTAL_SOAK_FAULTS
// (comma-separated kinds, e.g. "partition-leader,pause-leader") limits the
// kinds, for instance to faults that restart no process, so that the
// nodes' memory can be compared from start to end.
// ZEROTAL_NEMESIS_REPORT_DIR receives the report as JSON and markdown.
func TestSoak(t *testing.T) {
	spec := os.Getenv("ZEROTAL_SOAK")
	if spec == "" {
		t.Skip("set ZEROTAL_SOAK=10m to run the soak")
	}
	length, err := time.ParseDuration(spec)
	if err != nil || length <= 0 {
		t.Fatalf("ZEROTAL_SOAK=%q: want a duration such as 10m", spec)
	}
	kinds := allFaults
	if only := os.Getenv("ZEROTAL_SOAK_FAULTS"); only != "" {
		kinds = nil
		for _, k := range strings.Split(only, ",") {
			k := faultKind(strings.TrimSpace(k))
			if !slices.Contains(allFaults, k) {
				t.Fatalf("ZEROTAL_SOAK_FAULTS: unknown fault %q (known: %v)", k, allFaults)
			}
			kinds = append(kinds, k)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %v, faults %v", seed, length, kinds)
	runNemesis(t, seed, func(ctx context.Context, n *nemesis) error {
		end := time.Now().Add(length)
		for time.Now().Before(end) {
			gap := time.Second + time.Duration(n.r.Int64N(int64(2*time.Second)))
			if !sleepCtx(ctx, gap) {
				return ctx.Err()
			}
			k := kinds[n.r.IntN(len(kinds))]
			// Between one and two standard holds: a pause stays longer
			// than every TTL.
			hold := holdFor(k) + time.Duration(n.r.Int64N(int64(holdFor(k))))
			if err := n.inject(ctx, k, hold); err != nil {
				return err
			}
		}
		return nil
	})
}
