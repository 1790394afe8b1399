package redis_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

const envModelURL = "ZEROTAL_REDIS_MODEL_URL"

// TestModel drives three processes on one redis-server with the model's
// random schedules (driverstest.RunModel), one of them SIGKILLed mid-wait
// in each: a dead process's places lapse after the waiter lease (3s).
func TestModel(t *testing.T) {
	srv := redistest.Start(t)
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		return driverstest.StartModelProcs(t, 3, "TestModelChild", envModelURL+"="+srv.URL())
	}, driverstest.ModelOptions{Steps: 40, PlaceLapse: 3 * time.Second})
}

// TestModelChild is TestModel's child process; run alone it does nothing.
func TestModelChild(t *testing.T) {
	driverstest.ModelChild(func(ctx context.Context) (driverstest.Target, error) {
		return redis.Open(ctx, redis.Config{URL: os.Getenv(envModelURL)})
	})
	t.Skip("TestModel's child process")
}
