package api_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
)

// The query a client sends names its parameters as the type's JSON tags,
// which the schema publishes: a renamed field cannot leave the client
// sending the old name.
func TestWatchQuery_ValuesNameTheSchemasParameters(t *testing.T) {
	got := api.WatchQuery{Key: "k", Seen: "3,4", WaitMillis: 500}.Values()
	var want []string
	typ := reflect.TypeFor[api.WatchQuery]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("Values names %v; the JSON tags are %v", names, want)
	}
	if got.Get("key") != "k" || got.Get("seen") != "3,4" || got.Get("wait_ms") != "500" {
		t.Fatalf("Values = %v", got)
	}
}
