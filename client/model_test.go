package client_test

import (
	"testing"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers/driverstest"
)

// TestModel drives three clients of a real three-node cluster with the
// model's random schedules (driverstest.RunModel): every answer, fence and
// queue as the model has it. A client is in this process and is not
// killed; the nodes' own faults are the nemesis suite's.
func TestModel(t *testing.T) {
	addrs, _ := startCluster(t)
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		procs := make([]driverstest.Proc, 3)
		for i := range procs {
			c, err := client.New(client.Config{Addrs: addrs, AttemptTimeout: conformanceAttemptTimeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			procs[i] = driverstest.Proc{Driver: c, Name: "client"}
		}
		return procs
	}, driverstest.ModelOptions{Steps: 40})
}
