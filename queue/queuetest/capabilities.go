package queuetest

import (
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// Need skips the test, with a message naming what is missing, when the
// harness's backend lacks any of caps (queue.CapabilitiesOf). Every test of
// the suite calls it with the capabilities it relies on, so a backend that
// declares less than everything (see queue.Capable) runs the rest.
func (h *Harness) Need(t *testing.T, caps ...queue.Capability) {
	t.Helper()
	SkipUnless(t, h.Backend, caps...)
}

// SkipUnless skips the test when b lacks any of caps, naming what is
// missing.
func SkipUnless(t *testing.T, b queue.Backend, caps ...queue.Capability) {
	t.Helper()
	have := queue.CapabilitiesOf(b)
	if missing := queue.NewCapabilities(caps...) &^ have; missing != 0 {
		t.Skipf("%s lacks %s", queue.BackendName(b), missing)
	}
}
