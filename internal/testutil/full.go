package testutil

import (
	"os"
	"testing"
)

// EnvFull is the switch for the full test matrix. `go test ./...` without
// it runs every conformance suite once per store, in its default mode, at
// sizes that take seconds; with SLUICE_TEST_FULL=1 it also runs every mode
// of every store (batched and unbatched, cluster clients, routers over
// every pair of stores), the deepest flow chains and the long model runs.
// CI sets it.
const EnvFull = "SLUICE_TEST_FULL"

// Full reports whether the full matrix runs: SLUICE_TEST_FULL is 1 or
// true.
func Full() bool {
	switch os.Getenv(EnvFull) {
	case "1", "true":
		return true
	}
	return false
}

// NeedFull skips t unless the full matrix runs, saying what it is and how
// to run it. what completes "runs with the full matrix: ...", e.g. "the
// unbatched mode".
func NeedFull(t testing.TB, what string) {
	t.Helper()
	if !Full() {
		t.Skipf("%s runs with the full matrix: %s=1", what, EnvFull)
	}
}

// Size is small, or big when the full matrix runs without the race
// detector: a volume test checks the same interleavings at small sizes,
// and the race detector, which slows everything it instruments many times
// over, checks them at small sizes even in the full matrix.
func Size(small, big int) int {
	if Full() && !Race {
		return big
	}
	return small
}
