package queuetest

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// test is one test of the suite and the capabilities it relies on. The
// suite's tables declare them, so a backend that declares less than
// everything (see backend.Features) runs the rest, and no test is skipped by
// its name.
type test struct {
	name  string
	needs []queue.Capability
	run   func(t *testing.T, f Factory)
}

// needs lists the capabilities of a test in a table.
func needs(caps ...queue.Capability) []queue.Capability { return caps }

// runTests runs each of tests as a subtest of t. A test that needs
// capabilities is skipped, naming what is missing, as soon as it opens a
// backend that lacks any: they belong to the opened backend (a lane has
// priorities or not by its options).
func runTests(t *testing.T, f Factory, tests []test) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, needing(f, tc.needs)) })
	}
}

// needing returns f, checking that every backend it opens has caps.
func needing(f Factory, caps []queue.Capability) Factory {
	if len(caps) == 0 {
		return f
	}
	return func(t *testing.T, clk clock.Clock) backend.Backend {
		t.Helper()
		b := f(t, clk)
		SkipUnless(t, b, caps...)
		return b
	}
}

// Need skips the test, with a message naming what is missing, when the
// harness's backend lacks any of caps (backend.CommonCapabilities). The
// suite's own tests declare what they need in its tables; Need is for a
// test that needs a capability only on one of its paths, and for a
// backend's own tests.
func (h *Harness) Need(t *testing.T, caps ...queue.Capability) {
	t.Helper()
	SkipUnless(t, h.Backend, caps...)
}

// SkipUnless skips the test when b lacks any of caps, naming what is
// missing. For a router (backend.Router) it asks what every routed backend
// has (backend.CommonCapabilities): the suite's queues may sit on any of them.
func SkipUnless(t *testing.T, b backend.Backend, caps ...queue.Capability) {
	t.Helper()
	have := backend.CommonCapabilities(b)
	if missing := queue.NewCapabilities(caps...) &^ have; missing != 0 {
		t.Skipf("%s lacks %s", b.Features().Name, missing)
	}
}
