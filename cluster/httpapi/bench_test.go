package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
)

// BenchmarkAcquire measures the handler's own cost for one waiting
// acquire over a Store that answers at once: read, the one decode, the
// checks, and (gated) the wait cap, which reads the decoded request and
// so adds an atomic counter, not a second parse.
func BenchmarkAcquire(b *testing.B) {
	body := `{"key":"orders/12345","owner":"3f2a9c0e1b7d4a6f","ttl_ms":30000,"wait_ms":5000}`
	for _, bc := range []struct {
		name     string
		maxWaits int
	}{{"bare", drivers.Unlimited}, {"gated", 1 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			h := httpapi.New(newFakeStore(), httpapi.Options{NodeID: "n1", MaxWaits: bc.maxWaits})
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/acquire", strings.NewReader(body)))
				if rec.Code != http.StatusOK {
					b.Fatalf("acquire: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
