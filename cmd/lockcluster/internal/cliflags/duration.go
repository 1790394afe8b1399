package cliflags

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Durations. Every duration flag takes Go's units plus days ("7d",
// "1d12h"), and refuses a bare number other than 0, which would name no
// unit.

// durationValue is a pflag.Value for such a duration.
type durationValue struct{ p *time.Duration }

// Set implements pflag.Value.
func (d durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// String implements pflag.Value.
func (d durationValue) String() string {
	if d.p == nil {
		return "0s"
	}
	return FormatDuration(*d.p)
}

// Type implements pflag.Value.
func (d durationValue) Type() string { return "duration" }

// DurationVar defines a duration flag on fs, with default def.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationValue{p}, name, usage)
}

// durationForms ends every message about a malformed duration.
const durationForms = "write 30s, 5m, 2h or 1d"

// maxDays keeps a day count within time.Duration.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// ParseDuration is time.ParseDuration with a leading number of days ("7d",
// "1d12h", "1.5d"); a bare number is an error, except 0.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty; " + durationForms)
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		if f, _ := strconv.ParseFloat(t, 64); f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%s has no unit; %s", t, durationForms)
	}
	bad := fmt.Errorf("%q is not a duration; %s", t, durationForms)
	body, neg := t, false
	if rest, ok := strings.CutPrefix(body, "-"); ok {
		body, neg = rest, true
	} else {
		body = strings.TrimPrefix(body, "+")
	}
	var total time.Duration
	if i := strings.IndexFunc(body, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i > 0 && body[i] == 'd' {
		days, err := strconv.ParseFloat(body[:i], 64)
		if err != nil {
			return 0, bad
		}
		if days > float64(maxDays) {
			return 0, fmt.Errorf("%q is too long", t)
		}
		total = time.Duration(days * float64(24*time.Hour))
		body = body[i+1:]
	}
	if body != "" {
		if body[0] == '-' || body[0] == '+' {
			return 0, bad
		}
		d, err := time.ParseDuration(body)
		if err != nil {
			return 0, bad
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("%q is too long", t)
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// FormatDuration prints d the way the flags take it, without zero units:
// "30s", "10m", "1h30m", "7d", "1d12h".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	const day = 24 * time.Hour
	s := ""
	if d >= day {
		s = strconv.FormatInt(int64(d/day), 10) + "d"
		d %= day
	}
	if d > 0 {
		r := d.String() // "1h30m0s", "10m0s", "10s", "1.5s", "500ms"
		if strings.HasSuffix(r, "m0s") {
			r = strings.TrimSuffix(r, "0s")
		}
		if strings.HasSuffix(r, "h0m") {
			r = strings.TrimSuffix(r, "0m")
		}
		s += r
	}
	return sign + s
}

// DurationVarP is DurationVar with a one-letter shorthand.
func DurationVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	fs.VarP(durationValue{p}, name, short, usage)
}
