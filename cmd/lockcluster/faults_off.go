//go:build !faults

package main

import "github.com/zerotal/lock/cluster"

// injectFaults sets the fault-injection hooks of cfg in the faults build
// (faults_on.go); the default build leaves them nil: the host's clock,
// direct connections.
func injectFaults(*cluster.Config) {}
