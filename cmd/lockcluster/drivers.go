package main

// lockcluster's run and bench commands open every backend lock.Open knows.
import (
	_ "github.com/zerotal/lock/drivers/cluster"
	_ "github.com/zerotal/lock/drivers/postgres"
	_ "github.com/zerotal/lock/drivers/redis"
	_ "github.com/zerotal/lock/drivers/sqlite"
)
