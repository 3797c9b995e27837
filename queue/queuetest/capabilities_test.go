package queuetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
)

// lacking is a backend that declares caps; the tests below never call its
// other methods.
type lacking struct {
	queue.Backend
	caps queue.Capabilities
}

func (l lacking) Capabilities() queue.Capabilities { return l.caps }

// A test whose declared capability the backend lacks is skipped when it
// opens a backend; the others run.
func TestRunTestsSkipsWhatTheBackendLacks(t *testing.T) {
	f := func(*testing.T, clock.Clock) queue.Backend {
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
			{"Groups", needs(queue.CapGroups, queue.CapUnique), opens("Groups")},
			{"Priority", needs(queue.CapGroups, queue.CapPriority), opens("Priority")},
		})
	})
	if want := []string{"Plain", "Groups"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if want := map[string]bool{"Plain": false, "Groups": false, "Priority": true}; !maps.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
}
