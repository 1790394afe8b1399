package mysqltest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/fence"
	"github.com/zerotal/lock/fence/fencetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMySQL_Admission: the admission rule on MySQL's dialect, where the
// guard's affected rows cannot say it and the locking read decides.
func TestMySQL_Admission(t *testing.T) {
	t.Parallel()
	g, err := fence.NewDB(startServer(t), fence.DBConfig{Dialect: fence.MySQL})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	fencetest.Admission(t, g)
}

// TestMySQL_ConcurrentFencesNeverGoBack: concurrent writers on MySQL's
// dialect never commit a write after one with a higher fence.
func TestMySQL_ConcurrentFencesNeverGoBack(t *testing.T) {
	t.Parallel()
	fencetest.Concurrent(t, fencetest.SQL(t, startServer(t), fence.MySQL,
		`CREATE TABLE log (id BIGINT AUTO_INCREMENT PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB`,
		`INSERT INTO log (fence) VALUES (?)`))
}
