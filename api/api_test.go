package api_test

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
)

func ptr[T any](v T) *T { return &v }

// TestWire_RoundTrip pins the wire names: each value encodes to exactly
// its document, and the document decodes, with unknown fields refused,
// back to the value.
func TestWire_RoundTrip(t *testing.T) {
	tests := []struct {
		name string
		v    any
		doc  string
	}{
		{"AcquireRequest", &api.AcquireRequest{Key: "k", Owner: "o", TTLMillis: 30000, WaitMillis: 5000},
			`{"key":"k","owner":"o","ttl_ms":30000,"wait_ms":5000}`},
		{"AcquireRequest/no wait", &api.AcquireRequest{Key: "k", Owner: "o", TTLMillis: 30000},
			`{"key":"k","owner":"o","ttl_ms":30000}`},
		{"AcquireRequest/keys, semaphore, keep", &api.AcquireRequest{Keys: []string{"b", "a"}, Owner: "o", TTLMillis: 30000, WaitMillis: 5000, KeepMillis: 100, Semaphore: 3},
			`{"keys":["b","a"],"owner":"o","ttl_ms":30000,"wait_ms":5000,"keep_ms":100,"semaphore":3}`},
		{"AcquireRequest/mode", &api.AcquireRequest{Key: "k", Owner: "o", TTLMillis: 30000, Mode: api.ModeRead},
			`{"key":"k","owner":"o","ttl_ms":30000,"mode":"read"}`},
		{"AcquireResponse", &api.AcquireResponse{Key: "k", Owner: "o", Fence: 7, TTLMillis: 30000},
			`{"key":"k","owner":"o","fence":7,"ttl_ms":30000}`},
		{"AcquireResponse/keys", &api.AcquireResponse{Key: "b", Owner: "o", Fence: 7, TTLMillis: 30000, Locks: []api.KeyFence{{Key: "b", Fence: 7}, {Key: "a", Fence: 8}}},
			`{"key":"b","owner":"o","fence":7,"ttl_ms":30000,"locks":[{"key":"b","fence":7},{"key":"a","fence":8}]}`},
		{"ReleaseRequest", &api.ReleaseRequest{Key: "k", Owner: "o"},
			`{"key":"k","owner":"o"}`},
		{"ReleaseResponse", &api.ReleaseResponse{Released: true},
			`{"released":true}`},
		{"ExtendRequest", &api.ExtendRequest{Key: "k", Owner: "o", TTLMillis: 1000},
			`{"key":"k","owner":"o","ttl_ms":1000}`},
		{"ExtendResponse", &api.ExtendResponse{Extended: true, TTLMillis: 1000},
			`{"extended":true,"ttl_ms":1000}`},
		{"ForceReleaseRequest", &api.ForceReleaseRequest{Key: "k"},
			`{"key":"k"}`},
		{"Lock", &api.Lock{Key: "k", Owner: "o", Fence: 3, Remaining: 1500 * time.Millisecond, Waiters: 2},
			`{"key":"k","owner":"o","fence":3,"remaining_ms":1500,"waiters":2}`},
		{"Lock/holder", &api.Lock{Key: "k", Owner: "0123456789abcdef0123456789abcdef:deploy@h", Holder: "deploy@h", Fence: 3},
			`{"key":"k","owner":"0123456789abcdef0123456789abcdef:deploy@h","holder":"deploy@h","fence":3,"remaining_ms":0,"waiters":0}`},
		{"LockList", &api.LockList{Locks: []api.Lock{{Key: "a", Owner: "o", Fence: 1, Remaining: 10 * time.Millisecond}}, Truncated: true},
			`{"locks":[{"key":"a","owner":"o","fence":1,"remaining_ms":10,"waiters":0}],"truncated":true}`},
		{"LockList/empty", &api.LockList{Locks: []api.Lock{}},
			`{"locks":[],"truncated":false}`},
		{"Status", &api.Status{ID: "n1", State: "leader", LeaderID: "n1", LeaderAddr: "127.0.0.1:7101",
			LeaderHTTP: "127.0.0.1:7001", Term: 2, CommitIndex: 10, AppliedIndex: 9, LastIndex: 11,
			Peers: []api.Peer{{ID: "n1", Addr: "127.0.0.1:7101", Suffrage: "voter"}}, Keys: 4, Membership: api.MemberOf, Version: "v1.2.3"},
			`{"id":"n1","state":"leader","leader_id":"n1","leader_addr":"127.0.0.1:7101","leader_http":"127.0.0.1:7001",` +
				`"term":2,"commit_index":10,"applied_index":9,"last_index":11,` +
				`"peers":[{"id":"n1","addr":"127.0.0.1:7101","suffrage":"voter"}],"keys":4,"membership":"member","version":"v1.2.3"}`},
		{"JoinRequest", &api.JoinRequest{ID: "n4", Addr: "127.0.0.1:7104", HTTP: "127.0.0.1:7004"},
			`{"id":"n4","addr":"127.0.0.1:7104","http":"127.0.0.1:7004"}`},
		{"JoinRequest/no http", &api.JoinRequest{ID: "n4", Addr: "127.0.0.1:7104"},
			`{"id":"n4","addr":"127.0.0.1:7104"}`},
		{"NodeInfo", &api.NodeInfo{ID: "n4", ClusterID: "c", Membership: api.MemberWaiting, State: "follower", Members: []string{"n1"}},
			`{"id":"n4","cluster_id":"c","membership":"waiting","last_index":0,"servers":0,"state":"follower","members":["n1"]}`},
		{"NodeInfo/raft address and limits", &api.NodeInfo{ID: "n4", ClusterID: "c", Membership: api.MemberWaiting, State: "follower",
			Members: []string{}, RaftAddr: "10.0.0.4:7101", Limits: map[string]int{"max_keys": 100000, "max_waiters_per_key": -1}},
			`{"id":"n4","cluster_id":"c","membership":"waiting","last_index":0,"servers":0,"state":"follower","members":[],` +
				`"raft_addr":"10.0.0.4:7101","limits":{"max_keys":100000,"max_waiters_per_key":-1}}`},
		{"LeaveRequest", &api.LeaveRequest{ID: "n4"},
			`{"id":"n4"}`},
		{"Ready", &api.Ready{Ready: false, State: "candidate", Reason: "no leader: election in progress"},
			`{"ready":false,"state":"candidate","reason":"no leader: election in progress"}`},
		{"Ready/ready", &api.Ready{Ready: true, State: "leader"},
			`{"ready":true,"state":"leader"}`},
		{"ErrorBody", &api.ErrorBody{Code: api.CodeInvalid, Message: "lock: invalid key: empty"},
			`{"code":"invalid","message":"lock: invalid key: empty"}`},
		{"ErrorBody/holder", &api.ErrorBody{Code: api.CodeNotAcquired, Message: "held", HolderTTLMillis: ptr(int64(4200))},
			`{"code":"not_acquired","message":"held","holder_ttl_ms":4200}`},
		{"ErrorBody/holder 0", &api.ErrorBody{Code: api.CodeNotAcquired, Message: "held", HolderTTLMillis: ptr(int64(0))},
			`{"code":"not_acquired","message":"held","holder_ttl_ms":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.doc {
				t.Errorf("encoded\n got %s\nwant %s", got, tc.doc)
			}
			back := reflect.New(reflect.TypeOf(tc.v).Elem()).Interface()
			dec := json.NewDecoder(strings.NewReader(tc.doc))
			dec.DisallowUnknownFields()
			if err := dec.Decode(back); err != nil {
				t.Fatalf("decode %s: %v", tc.doc, err)
			}
			if !reflect.DeepEqual(back, tc.v) {
				t.Errorf("decoded %s\n got %+v\nwant %+v", tc.doc, back, tc.v)
			}
		})
	}
}

// TestAcquireRequest_MissingWaitIsZero: wait_ms may be left out, and
// means no wait.
func TestAcquireRequest_MissingWaitIsZero(t *testing.T) {
	var r api.AcquireRequest
	if err := json.Unmarshal([]byte(`{"key":"k","owner":"o","ttl_ms":1000}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.WaitMillis != 0 {
		t.Fatalf("WaitMillis = %d, want 0", r.WaitMillis)
	}
}

func TestCodes_StatusOfAndCodeOf(t *testing.T) {
	tests := []struct {
		code   string
		status int
	}{
		{api.CodeInvalid, http.StatusBadRequest},
		{api.CodeUnauthorized, http.StatusUnauthorized},
		{api.CodeWrongCluster, http.StatusForbidden},
		{api.CodeForbidden, http.StatusForbidden},
		{api.CodeNotFound, http.StatusNotFound},
		{api.CodeNotAcquired, http.StatusConflict},
		{api.CodeTooLarge, http.StatusRequestEntityTooLarge},
		{api.CodeFull, http.StatusTooManyRequests},
		{api.CodeUnavailable, http.StatusServiceUnavailable},
		{api.CodeUnsupported, http.StatusNotImplemented},
		{api.CodeInternal, http.StatusInternalServerError},
	}
	for _, tc := range tests {
		if got := api.StatusOf(tc.code); got != tc.status {
			t.Errorf("StatusOf(%q) = %d, want %d", tc.code, got, tc.status)
		}
		want := tc.code
		if tc.code == api.CodeWrongCluster {
			want = api.CodeForbidden // only the body says wrong_cluster
		}
		if got := api.CodeOf(tc.status); got != want {
			t.Errorf("CodeOf(%d) = %q, want %q", tc.status, got, want)
		}
	}
	for _, s := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		if got := api.CodeOf(s); got != api.CodeUnavailable {
			t.Errorf("CodeOf(%d) = %q, want unavailable", s, got)
		}
	}
	if got := api.StatusOf("no_such_code"); got != http.StatusInternalServerError {
		t.Errorf("StatusOf(unknown) = %d", got)
	}
}

func TestMillis(t *testing.T) {
	tests := []struct {
		d  time.Duration
		ms int64
	}{
		{-time.Second, 0},
		{0, 0},
		{1, 1},
		{time.Millisecond, 1},
		{time.Millisecond + 1, 2},
		{1500 * time.Microsecond, 2},
		{30 * time.Second, 30000},
		{math.MaxInt64, math.MaxInt64/int64(time.Millisecond) + 1},
	}
	for _, tc := range tests {
		if got := api.Millis(tc.d); got != tc.ms {
			t.Errorf("Millis(%v) = %d, want %d", tc.d, got, tc.ms)
		}
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		ms int64
		d  time.Duration
	}{
		{0, 0},
		{1, time.Millisecond},
		{30000, 30 * time.Second},
		{-5, -5 * time.Millisecond},
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
	}
	for _, tc := range tests {
		if got := api.Duration(tc.ms); got != tc.d {
			t.Errorf("Duration(%d) = %v, want %v", tc.ms, got, tc.d)
		}
	}
}

func TestBearer(t *testing.T) {
	if got := api.Bearer("tok"); got != "Bearer tok" {
		t.Fatalf("Bearer = %q", got)
	}
}

// A list with no locks is an empty array on the wire, never null, however
// the server built it.
func TestWire_EmptyLockListIsAnArray(t *testing.T) {
	b, err := json.Marshal(api.LockList{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"locks":[],"truncated":false}`; string(b) != want {
		t.Fatalf("LockList{} = %s, want %s", b, want)
	}
}
