package cliflags

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30s", 30 * time.Second, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"1.5d", 36 * time.Hour, ""},
		{"2d30m", 48*time.Hour + 30*time.Minute, ""},
		{"-1s", -time.Second, ""},
		{"0", 0, ""},
		{" 5m ", 5 * time.Minute, ""},
		{"30", 0, "30 has no unit; write 30s, 5m, 2h or 1d"},
		{"1.5", 0, "1.5 has no unit; write 30s, 5m, 2h or 1d"},
		{"soon", 0, `"soon" is not a duration`},
		{"d", 0, `"d" is not a duration`},
		{"1d-2h", 0, `"1d-2h" is not a duration`},
		{"", 0, "empty"},
		{"999999999d", 0, "too long"},
	} {
		got, err := ParseDuration(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseDuration(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * time.Second: "30s", 10 * time.Minute: "10m", 90 * time.Minute: "1h30m", time.Hour: "1h",
		7 * 24 * time.Hour: "7d", 36 * time.Hour: "1d12h", 1500 * time.Millisecond: "1.5s", -time.Minute: "-1m",
		24*time.Hour + time.Second: "1d1s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}
