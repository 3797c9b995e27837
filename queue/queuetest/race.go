//go:build race

package queuetest

// raceEnabled is true in builds with the race detector, which slows
// everything it instruments (a pure-Go SQLite included) many times over.
const raceEnabled = true
