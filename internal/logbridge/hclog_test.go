package logbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// record is what a handler received.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// recorder is a slog.Handler that keeps the records at or above min.
type recorder struct {
	min     slog.Level
	records *[]record
	attrs   []slog.Attr
}

func (r recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.min }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	got := record{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range r.attrs {
		got.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		got.attrs[a.Key] = a.Value.String()
		return true
	})
	*r.records = append(*r.records, got)
	return nil
}

func (r recorder) WithAttrs(as []slog.Attr) slog.Handler {
	r.attrs = append(r.attrs[:len(r.attrs):len(r.attrs)], as...)
	return r
}

func (r recorder) WithGroup(string) slog.Handler { return r }

func newRecorder(min slog.Level) (*slog.Logger, *[]record) {
	var records []record
	return slog.New(recorder{min: min, records: &records}), &records
}

func TestHCLog_LevelsMapToSlog(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(LevelTrace)
	h := HCLog(l, "raft")
	h.Trace("t")
	h.Debug("d")
	h.Info("i")
	h.Warn("w")
	h.Error("e")
	h.Log(hclog.Warn, "logged")
	want := []struct {
		level slog.Level
		msg   string
	}{{LevelTrace, "t"}, {slog.LevelDebug, "d"}, {slog.LevelInfo, "i"}, {slog.LevelWarn, "w"}, {slog.LevelError, "e"}, {slog.LevelWarn, "logged"}}
	if len(*records) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(*records), len(want), *records)
	}
	for i, w := range want {
		if r := (*records)[i]; r.level != w.level || r.msg != w.msg || r.attrs[NameKey] != "raft" {
			t.Errorf("record %d = %+v, want level %v msg %q logger raft", i, r, w.level, w.msg)
		}
	}
}

func TestHCLog_HandlerLevelDecides(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(slog.LevelWarn)
	h := HCLog(l, "")
	h.Info("dropped")
	h.Debug("dropped")
	h.Warn("kept")
	if len(*records) != 1 || (*records)[0].msg != "kept" {
		t.Fatalf("records = %+v, want only the warning", *records)
	}
	if _, named := (*records)[0].attrs[NameKey]; named {
		t.Errorf("an unnamed logger added %q", NameKey)
	}
	if h.IsInfo() || h.IsDebug() || h.IsTrace() || !h.IsWarn() || !h.IsError() {
		t.Error("Is* do not follow the handler's level")
	}
	if got := h.GetLevel(); got != hclog.Warn {
		t.Errorf("GetLevel = %v, want Warn", got)
	}
	h.SetLevel(hclog.Trace) // the handler decides, not the adapter
	h.Info("still dropped")
	if len(*records) != 1 {
		t.Errorf("SetLevel changed what is logged: %+v", *records)
	}
	if HCLog(slog.New(slog.DiscardHandler), "x").GetLevel() != hclog.Off {
		t.Error("a discarding logger should report Off")
	}
}

func TestHCLog_NamedAndWith(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(slog.LevelInfo)
	h := HCLog(l, "raft").Named("transport").With("peer", "n2")
	h.Info("dial", "addr", "127.0.0.1:1")
	HCLog(l, "raft").Info("plain")
	h.ResetNamed("snapshot").Info("reset")
	if len(*records) != 3 {
		t.Fatalf("records = %+v", *records)
	}
	r := (*records)[0]
	if r.attrs[NameKey] != "raft.transport" || r.attrs["peer"] != "n2" || r.attrs["addr"] != "127.0.0.1:1" {
		t.Errorf("named record = %+v", r)
	}
	if _, ok := (*records)[1].attrs["peer"]; ok {
		t.Error("With changed its parent")
	}
	if got := (*records)[2].attrs[NameKey]; got != "snapshot" {
		t.Errorf("ResetNamed name = %q", got)
	}
	if h.Name() != "raft.transport" {
		t.Errorf("Name = %q", h.Name())
	}
	if args := h.ImpliedArgs(); len(args) != 2 || args[0] != "peer" {
		t.Errorf("ImpliedArgs = %v", args)
	}
}

func TestHCLog_StandardLoggerInfersLevels(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(slog.LevelDebug)
	std := HCLog(l, "http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	std.Print("[ERR] accept failed")
	std.Print("[DEBUG] detail")
	std.Print("no prefix")
	want := []record{{level: slog.LevelError, msg: "accept failed"}, {level: slog.LevelDebug, msg: "detail"}, {level: slog.LevelInfo, msg: "no prefix"}}
	if len(*records) != len(want) {
		t.Fatalf("records = %+v", *records)
	}
	for i, w := range want {
		if r := (*records)[i]; r.level != w.level || r.msg != w.msg || r.attrs[NameKey] != "http" {
			t.Errorf("record %d = %+v, want %v %q", i, r, w.level, w.msg)
		}
	}
	forced := HCLog(l, "").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error})
	if _, err := forced.Write([]byte("[DEBUG] forced\n")); err != nil {
		t.Fatal(err)
	}
	if r := (*records)[len(*records)-1]; r.level != slog.LevelError || !strings.Contains(r.msg, "forced") {
		t.Errorf("forced record = %+v", r)
	}
}

// Through a text handler the name and the level read naturally.
func TestHCLog_TextOutput(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	HCLog(l, "raft").Warn("heartbeat timeout reached, starting election", "last-leader-addr", "")
	if got := buf.String(); !strings.Contains(got, `level=WARN msg="heartbeat timeout reached, starting election" logger=raft last-leader-addr=""`) {
		t.Errorf("text output = %q", got)
	}
	buf.Reset()
	HCLog(l, "raft").Info("initial configuration", "servers", hclog.Fmt("%+v", []int{1, 2}), "id", hclog.Hex(255))
	if got := buf.String(); !strings.Contains(got, `servers="[1 2]" id=0xff`) {
		t.Errorf("hclog.Fmt and hclog.Hex rendered as %q", got)
	}
	var nilLogger *slog.Logger
	HCLog(nilLogger, "x").Error("discarded") // a nil logger discards
}

// A connection the node closed itself, as it stops, is no error: raft's
// transport reports it at ERROR, and the bridge logs it at DEBUG.
func TestAdapter_ClosedConnectionOnStopIsDebug(t *testing.T) {
	var buf bytes.Buffer
	l := HCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "transport")
	l.Error("failed to decode incoming command", "error", fmt.Errorf("read tcp 127.0.0.1:1->127.0.0.1:2: %w", net.ErrClosed))
	if buf.Len() != 0 {
		t.Fatalf("an ordinary stop was logged at INFO or above: %s", buf.String())
	}
	l.Error("failed to decode incoming command", "error", errors.New("unexpected EOF"))
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a real error was not logged at ERROR: %q", buf.String())
	}
}
