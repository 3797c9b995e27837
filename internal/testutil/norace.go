//go:build !race

package testutil

// Race is true in builds with the race detector.
const Race = false
