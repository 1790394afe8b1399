// Package hostport checks the host:port addresses a node is configured
// with and the ones a join names, in one place for the node's
// configuration and its HTTP API.
package hostport

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Check refuses an address a peer could not dial: empty, not host:port,
// or without a port.
func Check(addr string) error {
	if addr == "" {
		return errors.New("required (host:port)")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if port == "" {
		return fmt.Errorf("%q has no port", addr)
	}
	return nil
}

// CheckAdvertised accepts an address a peer can dial: host:port with a
// host that is not all interfaces and a port other than 0.
func CheckAdvertised(addr string) error {
	if err := Check(addr); err != nil {
		return err
	}
	if AllInterfaces(addr) {
		return fmt.Errorf("%q names all interfaces, which no peer can dial: give this node's host name or IP", addr)
	}
	_, port, _ := net.SplitHostPort(addr)
	if strings.Trim(port, "0123456789") != "" {
		return nil // a service name ("https"), looked up when dialled
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("%q needs a port from 1 to 65535", addr)
	}
	return nil
}

// AllInterfaces reports whether addr's host is empty, 0.0.0.0 or ::
// (a listener on every interface).
func AllInterfaces(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}
