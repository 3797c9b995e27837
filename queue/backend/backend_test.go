package backend_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func TestFairTagAndOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                string
		v, f                int64
		weight              int
		wantStart, wantNext int64
	}{
		{"idle tenant starts at V", 5000, 1000, 1, 5000, 6000},
		{"busy tenant starts at its finish", 5000, 9000, 1, 9000, 10000},
		{"weight 4 advances a quarter", 0, 0, 4, 0, 250},
		{"weight 0 counts as 1", 0, 0, 0, 0, 1000},
		{"weight above max is clamped", 0, 0, 5000, 0, 1},
	}
	for _, c := range cases {
		s, n := backend.FairTag(c.v, c.f, c.weight)
		if s != c.wantStart || n != c.wantNext {
			t.Errorf("%s: FairTag(%d, %d, %d) = %d, %d; want %d, %d", c.name, c.v, c.f, c.weight, s, n, c.wantStart, c.wantNext)
		}
	}
	orders := []struct {
		start       int64
		prio, aging int
		band, rank  int64
	}{
		{7000, 3, 0, 3, 7000},
		{7000, 3, 10, 0, 37000},
		{7000, 0, 10, 0, 7000},
		{0, queue.MaxPriority, queue.MaxAgingStep, 0, int64(queue.MaxPriority) * queue.MaxAgingStep * backend.FairUnit},
	}
	for _, o := range orders {
		b, r := backend.FairOrder(o.start, o.prio, o.aging)
		if b != o.band || r != o.rank {
			t.Errorf("FairOrder(%d, %d, %d) = %d, %d; want %d, %d", o.start, o.prio, o.aging, b, r, o.band, o.rank)
		}
	}
	if _, r := backend.FairOrder(0, queue.MaxPriority, queue.MaxAgingStep); r >= 1<<53 {
		t.Errorf("largest rank %d is not exact as a float64", r)
	}
}

// TestNewEventID checks the id's form and that ids do not repeat.
func TestNewEventID(t *testing.T) {
	t.Parallel()
	form := regexp.MustCompile(`^evt_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := backend.NewEventID()
		if !form.MatchString(id) {
			t.Fatalf("NewEventID() = %q, want evt_ and 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewEventID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestEventForState(t *testing.T) {
	t.Parallel()
	for _, s := range queue.States {
		got, ok := backend.EventForState(s)
		want, final := map[queue.State]queue.EventType{
			queue.StateCompleted: queue.EventJobCompleted,
			queue.StateFailed:    queue.EventJobFailed,
			queue.StateCancelled: queue.EventJobCancelled,
		}[s]
		if got != want || ok != final {
			t.Errorf("EventForState(%s) = %q, %v; want %q, %v", s, got, ok, want, final)
		}
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	err := backend.Unsupported("mystore", queue.CapList)
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, queue.ErrUnsupported) || ue.Backend != "mystore" || ue.Feature != queue.CapList {
		t.Fatalf("Unsupported = %#v, want an *UnsupportedError for mystore and %s", err, queue.CapList)
	}
	if want := "queue: mystore does not support listing jobs"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}
