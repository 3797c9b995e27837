package queuetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// lacking is a backend that declares caps and no optional part; the tests
// below never call its other methods.
type lacking struct {
	backend.Backend
	caps queue.Capabilities
}

func (l lacking) Features() backend.Features {
	return backend.Features{Name: "lacking", Capabilities: l.caps}
}

// A test whose declared capability the backend lacks is skipped when it
// opens a backend; the others run.
func TestRunTestsSkipsWhatTheBackendLacks(t *testing.T) {
	f := func(*testing.T, clock.Clock) backend.Backend {
		return lacking{caps: queue.AllCapabilities.Without(queue.CapPriority)}
	}
	var ran []string
	skipped := map[string]bool{}
	opens := func(name string) func(*testing.T, Factory) {
		return func(t *testing.T, f Factory) {
			defer func() { skipped[name] = t.Skipped() }()
			f(t, clock.Real)
			ran = append(ran, name)
		}
	}
	t.Run("suite", func(t *testing.T) {
		runTests(t, f, []test{
			{"Plain", nil, opens("Plain")},
			{"Unique", needs(queue.CapList, queue.CapUnique), opens("Unique")},
			{"Priority", needs(queue.CapList, queue.CapPriority), opens("Priority")},
		})
	})
	if want := []string{"Plain", "Unique"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if want := map[string]bool{"Plain": false, "Unique": false, "Priority": true}; !maps.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
}
