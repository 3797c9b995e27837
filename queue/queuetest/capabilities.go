package queuetest

import (
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// Need skips the test, with a message naming what is missing, when the
// harness's backend lacks any of caps (queue.CommonCapabilities). Every test of
// the suite calls it with the capabilities it relies on, so a backend that
// declares less than everything (see queue.Features) runs the rest.
func (h *Harness) Need(t *testing.T, caps ...queue.Capability) {
	t.Helper()
	SkipUnless(t, h.Backend, caps...)
}

// SkipUnless skips the test when b lacks any of caps, naming what is
// missing. For a router (queue.Router) it asks what every routed backend
// has (queue.CommonCapabilities): the suite's queues may sit on any of them.
func SkipUnless(t *testing.T, b queue.Backend, caps ...queue.Capability) {
	t.Helper()
	have := queue.CommonCapabilities(b)
	if missing := queue.NewCapabilities(caps...) &^ have; missing != 0 {
		t.Skipf("%s lacks %s", b.Features().Name, missing)
	}
}
