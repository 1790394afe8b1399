package demo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zerotal/lock"
)

func TestDemo_RunsOnTheMemoryDriver(t *testing.T) {
	m, err := lock.Open(t.Context(), lock.Config{Driver: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out bytes.Buffer
	if err := Steps(t.Context(), &out, m); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"not acquired", "fence", "refused", "lost", "demo done"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
