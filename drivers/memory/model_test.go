package memory_test

import (
	"testing"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/memory"
)

// TestModel drives three handles on one engine with the model's random
// schedules (driverstest.RunModel): every answer, fence and queue as the
// model has it.
func TestModel(t *testing.T) {
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		d := newDriver(t, memory.Config{})
		procs := make([]driverstest.Proc, 3)
		for i := range procs {
			procs[i] = driverstest.Proc{Driver: memory.Wrap(d.Engine()), Name: "handle"}
		}
		return procs
	}, driverstest.ModelOptions{Steps: 60})
}
