package lock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/zerotal/lock"
)

// An error that leaves a handler unhandled becomes the status it stands
// for: contention is a 409 Conflict, as a client expects.
func ExampleStatusCode() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	handler := func(w http.ResponseWriter, r *http.Request) {
		err := m.Try(r.Context(), "invoice:123", 10*time.Second, func(context.Context, *lock.Lock) error {
			return nil // process the invoice
		})
		if err != nil {
			http.Error(w, err.Error(), lock.StatusCode(err))
			return
		}
		fmt.Fprintln(w, "done")
	}

	// Another worker holds the invoice while the request comes in.
	held := m.Make("invoice:123", 10*time.Second)
	if ok, err := held.Acquire(ctx); !ok || err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest("POST", "/invoices/123", nil))
	fmt.Println(rec.Code)
	_ = held.Release(ctx)
	// Output:
	// 409
}
