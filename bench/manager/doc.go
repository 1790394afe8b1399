// Package manager holds the benchmarks of a backend through the public
// API (lock.Manager), which each driver's tests run on their backend: how
// a backend does as the locks it holds grow (BenchHeld, `make
// bench-scale`), and what a semaphore or read lock cycle costs beside a
// mutex's (BenchShared, `make bench`). They live apart from
// drivers/driverstest, whose conformance suite tests a driver alone and
// imports nothing above package drivers.
package manager
