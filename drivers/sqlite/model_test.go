package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

const envModelPath = "ZEROTAL_SQLITE_MODEL_PATH"

// TestModel drives three processes sharing one file with the model's
// random schedules (driverstest.RunModel), one of them SIGKILLed mid-wait
// in each: a dead process's places lapse after the waiter lease (3s).
func TestModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.db")
	d, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close() // the schema, before the processes race to make it
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		return driverstest.StartModelProcs(t, 3, "TestModelChild", envModelPath+"="+path)
	}, driverstest.ModelOptions{Steps: 40, PlaceLapse: 3 * time.Second})
}

// TestModelChild is TestModel's child process; run alone it does nothing.
func TestModelChild(t *testing.T) {
	driverstest.ModelChild(func(ctx context.Context) (driverstest.Target, error) {
		return sqlite.Open(ctx, sqlite.Config{Path: os.Getenv(envModelPath)})
	})
	t.Skip("TestModel's child process")
}
