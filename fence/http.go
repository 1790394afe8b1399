package fence

import (
	"context"
	"errors"
	"net/http"
)

// Handler admits a request to next only when its fence is not below the
// highest fence store has seen for its resource, and records its fence as
// the new highest once next has served it, whatever next answered. The
// fence and the resource come from the request's Header. A nil store is a
// new Memory. Wrap the routes that write: a read needs no fence.
//
// Its answers, each with a plain-text body saying why:
//
//   - 428 Precondition Required: the request has no Header;
//   - 400 Bad Request: the Header is malformed, or fence 0;
//   - 412 Precondition Failed: a newer holder has been here; the answer's
//     Header carries the highest fence seen (CheckResponse reads it);
//   - 503 Service Unavailable: store could not check the fence.
//
// next runs inside store.Guard: requests of one resource pass one at a
// time, so an older holder's request that arrives while a newer one's is
// being served waits for it and is refused. With a DB store next runs in
// the guard's transaction (TxFromContext) and its statements commit with
// the fence after next has returned; if that commit fails, next has
// already answered, so a handler that must answer the commit's outcome
// writes through DB.Write itself instead.
func Handler(next http.Handler, store Store) http.Handler {
	if store == nil {
		store = &Memory{}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(Header)
		if v == "" {
			http.Error(w, "fence: the request has no "+Header+" header (\"<resource> <fence>\"): this resource takes writes only from a lock's holder", http.StatusPreconditionRequired)
			return
		}
		resource, fence, err := ParseHeader(v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		served := false
		err = store.Guard(r.Context(), resource, fence, func(ctx context.Context) error {
			served = true
			next.ServeHTTP(w, r.WithContext(ctx))
			return nil
		})
		var stale *StaleError
		switch {
		case err == nil || served: // next has answered
		case errors.As(err, &stale):
			w.Header().Set(Header, FormatHeader(stale.Resource, stale.Highest))
			http.Error(w, stale.Error(), http.StatusPreconditionFailed)
		default:
			// The store's error is not the client's to read (it may name
			// tables or hosts).
			http.Error(w, "fence: cannot check the fence now", http.StatusServiceUnavailable)
		}
	})
}
