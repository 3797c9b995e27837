package pgqueue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// A name Postgres cannot hold is looked up as what it is, a name nothing
// has: not found, never a store fault (which a caller would retry).
func TestLookupUnstorableNames(t *testing.T) {
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	for _, name := range []string{"a\x00b", "a\xffb"} {
		if _, err := s.GetSchedule(ctx, name); !errors.Is(err, queue.ErrScheduleNotFound) {
			t.Errorf("GetSchedule(%q) = %v, want ErrScheduleNotFound", name, err)
		}
		if _, err := s.Flow(ctx, name); !errors.Is(err, queue.ErrFlowNotFound) {
			t.Errorf("Flow(%q) = %v, want ErrFlowNotFound", name, err)
		}
		if _, err := s.Group(ctx, name); err == nil || !(errors.Is(err, queue.ErrGroupNotFound) || errors.Is(err, queue.ErrInvalidArgument)) {
			t.Errorf("Group(%q) = %v, want not found or an invalid argument", name, err)
		}
	}
}
