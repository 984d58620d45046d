//go:build race

package storetest

// raceDetector is true in a build with -race. The race detector needs interleavings, not volume, and
// makes SQLite (Go code here, instrumented) several times slower: the suite trims sizes that only load
// the database.
const raceDetector = true
