package fence_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/fence"
)

// heldLock stands for a *lock.Lock held with a fence: the client side
// needs only its Key and Fence.
type heldLock struct {
	key   string
	fence uint64
}

func (l heldLock) Key() string   { return l.key }
func (l heldLock) Fence() uint64 { return l.fence }

// A service takes writes only from the current holder of the lock its
// resource is guarded by: the older holder's request is answered 412.
func ExampleHandler() {
	var mu sync.Mutex
	report := "empty"
	srv := httptest.NewServer(fence.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		report = string(body)
		mu.Unlock()
		fmt.Fprintln(w, "stored")
	}), nil)) // nil: the highest fences in memory
	defer srv.Close()

	put := func(l heldLock, body string) *http.Response {
		client := &http.Client{Transport: &fence.Transport{Lock: l}}
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/reports/monthly", strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp
	}

	resp := put(heldLock{"reports/monthly", 8}, "from the newer holder")
	fmt.Println("newer holder:", resp.Status)
	resp = put(heldLock{"reports/monthly", 7}, "from the older holder")
	fmt.Println("older holder:", resp.Status)
	err := fence.CheckResponse(resp)
	fmt.Println(errors.Is(err, fence.ErrStale), err)
	mu.Lock()
	fmt.Println("the report:", report)
	mu.Unlock()
	// Output:
	// newer holder: 200 OK
	// older holder: 412 Precondition Failed
	// true fence: stale: fence 7 for "reports/monthly" is below 8, the highest seen: a newer holder has written since
	// the report: from the newer holder
}

// A holder sends its writes through a client whose Transport adds the
// lock's key and fence to each request.
func ExampleTransport() {
	srv := httptest.NewServer(fence.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("the service got", r.Header.Get(fence.Header))
	}), nil))
	defer srv.Close()

	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{}) // the memory driver; any backend gives fences
	if err != nil {
		panic(err)
	}
	defer m.Close()
	err = m.Try(ctx, "reports/monthly", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		client := &http.Client{Transport: &fence.Transport{Lock: l}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/reports/monthly", strings.NewReader("..."))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := fence.CheckResponse(resp); err != nil {
			return err // a newer holder has written: stop
		}
		fmt.Println(resp.Status)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// the service got reports%2Fmonthly 1
	// 200 OK
}
