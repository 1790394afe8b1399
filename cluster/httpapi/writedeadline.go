package httpapi

import (
	"net/http"
	"time"
)

// writeDeadline gives every plain answer timeout to be written, from its
// first byte: a client that sends a request and never reads the answer
// holds the connection and its goroutine for at most that long. The
// clock starts at the answer, not the request, so that a waiting
// acquire may wait as long as it asked. Stream frames do not pass here
// (the stream writer sets its own deadline per write), and a hijacked
// connection has its deadlines cleared by the stream.
func writeDeadline(next http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, timeout: timeout}, r)
	})
}

// deadlineWriter sets the connection's write deadline at the first
// WriteHeader or Write.
type deadlineWriter struct {
	http.ResponseWriter
	timeout time.Duration
	set     bool
}

func (w *deadlineWriter) arm() {
	if !w.set {
		w.set = true
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(status int) {
	w.arm()
	w.ResponseWriter.WriteHeader(status)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (Hijack for
// the stream, Flush, deadlines).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
