package memqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/backendkit/memqueue"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestConformance runs the suite every backend.Backend must pass. The suite
// skips the tests that need a capability memqueue does not declare.
func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return memqueue.New(memqueue.Options{Clock: clk})
	})
}

// TestRefusesWhatItLacks checks that a spec asking for a capability
// memqueue lacks is refused, whether it comes through a Client or straight
// to Enqueue, and that nothing is stored.
func TestRefusesWhatItLacks(t *testing.T) {
	ctx := context.Background()
	b := memqueue.New(memqueue.Options{Clock: clock.NewFake(time.Unix(0, 0))})
	unique := queue.JobSpec{Queue: "q", Kind: "k", UniqueKey: "u", MaxAttempts: 1}
	_, viaClient := queue.NewClient(b).Enqueue(ctx, unique)
	_, direct := b.Enqueue(ctx, []queue.JobSpec{unique})
	for _, err := range []error{viaClient, direct} {
		var ue *queue.UnsupportedError
		if !errors.As(err, &ue) || ue.Backend != "memqueue" || ue.Feature != queue.CapUnique {
			t.Errorf("Enqueue with a unique key = %v, want an *UnsupportedError naming memqueue and %s", err, queue.CapUnique)
		}
	}
	if st, err := b.Stats(ctx); err != nil || len(st) != 0 {
		t.Errorf("Stats = %+v, %v; want nothing stored", st, err)
	}
}
