package main

import (
	"net/http"
	"net/http/pprof"
)

// pprofHandler serves Go's profiler under /debug/pprof/, for agent's
// --pprof. The node serves it behind its token. The handlers go on a mux
// of their own: importing net/http/pprof also registers them on
// http.DefaultServeMux, which lockcluster never serves.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
