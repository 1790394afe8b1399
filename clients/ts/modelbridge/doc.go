// Package modelbridge holds the test that drives the TypeScript memory
// driver (clients/ts/src/memory.ts) against driverstest.Model, the one
// reference model of the waiting rules: the driver runs in a node process
// (clients/ts/test/modelchild.mjs) that speaks driverstest's JSON-lines
// protocol, and driverstest.RunModel drives it as it drives the SQLite
// and Redis drivers' child processes. It has no code of its own.
package modelbridge
