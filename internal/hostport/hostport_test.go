package hostport

import "testing"

func TestCheck(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7100": true, "node1:7100": true, "[::1]:7100": true, ":7100": true,
		"": false, "node1": false, "node1:": false, "127.0.0.1:7100:1": false,
	} {
		if err := Check(addr); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestCheckAdvertised(t *testing.T) {
	for addr, ok := range map[string]bool{
		"10.0.0.5:7100": true, "node1:https": true,
		"0.0.0.0:7100": false, "[::]:7100": false, ":7100": false, "node1:0": false, "node1:70000": false,
	} {
		if err := CheckAdvertised(addr); (err == nil) != ok {
			t.Errorf("CheckAdvertised(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestAllInterfaces(t *testing.T) {
	for addr, want := range map[string]bool{
		":7100": true, "0.0.0.0:7100": true, "[::]:7100": true, "127.0.0.1:7100": false, "host:1": false, "bad": false,
	} {
		if got := AllInterfaces(addr); got != want {
			t.Errorf("AllInterfaces(%q) = %v, want %v", addr, got, want)
		}
	}
}
