package lock_test

// The tests of this package open every backend through lock.Open, so they
// link every driver, as an application using them would.
import (
	_ "github.com/zerotal/lock/drivers/cluster"
	_ "github.com/zerotal/lock/drivers/postgres"
	_ "github.com/zerotal/lock/drivers/redis"
	_ "github.com/zerotal/lock/drivers/sqlite"
)
