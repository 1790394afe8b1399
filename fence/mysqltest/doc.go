// Package mysqltest runs the fence package's checks on MySQL's dialect
// against a real MariaDB server (mariadbd from Debian's mariadb-server,
// started by the test in a temporary directory on a free loopback port).
// It is a module of its own so that the MySQL driver never becomes a
// dependency of github.com/zerotal/lock:
//
//	cd fence/mysqltest && go test -race -count=1 ./...
package mysqltest
