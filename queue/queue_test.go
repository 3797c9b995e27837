package queue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidateSpec(t *testing.T) {
	t.Parallel()
	ok := queue.JobSpec{Queue: "q", Kind: "k"}
	cases := []struct {
		name  string
		edit  func(s *queue.JobSpec)
		max   int
		field string // empty: valid
	}{
		{"minimal", func(s *queue.JobSpec) {}, 0, ""},
		{"everything", func(s *queue.JobSpec) {
			*s = queue.JobSpec{Queue: "q", Kind: "k", Payload: []byte("p"), Tenant: "t", Priority: queue.MaxPriority,
				RunAt: time.Now(), MaxAttempts: 3, Timeout: time.Second, UniqueKey: "u", UniqueFor: time.Hour, Group: "g"}
		}, 0, ""},
		{"empty queue", func(s *queue.JobSpec) { s.Queue = "" }, 0, "JobSpec.Queue"},
		{"empty kind", func(s *queue.JobSpec) { s.Kind = "" }, 0, "JobSpec.Kind"},
		{"long tenant", func(s *queue.JobSpec) { s.Tenant = strings.Repeat("t", 256) }, 0, "JobSpec.Tenant"},
		{"group control char", func(s *queue.JobSpec) { s.Group = "a\x00b" }, 0, "JobSpec.Group"},
		{"negative priority", func(s *queue.JobSpec) { s.Priority = -1 }, 0, "JobSpec.Priority"},
		{"negative attempts", func(s *queue.JobSpec) { s.MaxAttempts = -2 }, 0, "JobSpec.MaxAttempts"},
		{"negative timeout", func(s *queue.JobSpec) { s.Timeout = -1 }, 0, "JobSpec.Timeout"},
		{"negative unique for", func(s *queue.JobSpec) { s.UniqueKey, s.UniqueFor = "u", -1 }, 0, "JobSpec.UniqueFor"},
		{"unique for alone", func(s *queue.JobSpec) { s.UniqueFor = time.Second }, 0, "JobSpec.UniqueFor"},
		{"long unique key", func(s *queue.JobSpec) { s.UniqueKey = strings.Repeat("u", 1025) }, 0, "JobSpec.UniqueKey"},
		{"payload at limit", func(s *queue.JobSpec) { s.Payload = make([]byte, 8) }, 8, ""},
		{"payload over limit", func(s *queue.JobSpec) { s.Payload = make([]byte, 9) }, 8, "JobSpec.Payload"},
		{"payload over default", func(s *queue.JobSpec) { s.Payload = make([]byte, queue.DefaultMaxPayload+1) }, 0, "JobSpec.Payload"},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		err := queue.ValidateSpec(s, c.max)
		var ia *queue.InvalidArgumentError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: got %v, want valid", c.name, err)
		case c.field != "" && (!errors.As(err, &ia) || ia.Field != c.field):
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.field)
		case c.field != "" && !errors.Is(err, queue.ErrInvalidArgument):
			t.Errorf("%s: %v does not match ErrInvalidArgument", c.name, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{5, 8 * time.Second, 16 * time.Second},
		{13, 30 * time.Minute, time.Hour}, // 2^12 s is over the one-hour cap
		{40, 30 * time.Minute, time.Hour},
	}
	for _, c := range cases {
		seen := map[time.Duration]bool{}
		for i := 0; i < 200; i++ {
			got := queue.DefaultBackoff(c.attempt, nil)
			if got < c.min || got > c.max {
				t.Fatalf("DefaultBackoff(%d) = %s, want within [%s, %s]", c.attempt, got, c.min, c.max)
			}
			seen[got] = true
		}
		if len(seen) < 10 {
			t.Errorf("DefaultBackoff(%d): only %d distinct delays in 200 draws, want jitter", c.attempt, len(seen))
		}
	}
	if got := queue.ExponentialBackoff(time.Millisecond, time.Millisecond)(1, nil); got < time.Millisecond/2 || got > time.Millisecond {
		t.Errorf("ExponentialBackoff(1ms, 1ms)(1) = %s", got)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	got := queue.Retention{Failed: -1, Cancelled: time.Minute}.WithDefaults()
	want := queue.Retention{Completed: 24 * time.Hour, Failed: -1, Cancelled: time.Minute}
	if got != want {
		t.Fatalf("WithDefaults = %+v, want %+v", got, want)
	}
	if d, ok := got.For(queue.StateCompleted); !ok || d != 24*time.Hour {
		t.Errorf("For(completed) = %s, %v", d, ok)
	}
	if _, ok := got.For(queue.StatePending); ok {
		t.Error("For(pending) reports a retention")
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	final := map[queue.State]bool{queue.StateCompleted: true, queue.StateFailed: true, queue.StateCancelled: true}
	for _, s := range queue.States {
		if s.Final() != final[s] || !s.Valid() {
			t.Errorf("%s: Final %v Valid %v", s, s.Final(), s.Valid())
		}
	}
	if queue.State("nope").Valid() {
		t.Error(`State("nope").Valid() = true`)
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	base := errors.New("bad")
	p := queue.Permanent(base)
	if !queue.IsPermanent(p) || !errors.Is(p, base) || p.Error() != "bad" {
		t.Errorf("Permanent(bad) = %v; IsPermanent %v, Is(base) %v", p, queue.IsPermanent(p), errors.Is(p, base))
	}
	if queue.IsPermanent(base) {
		t.Error("IsPermanent(plain error) = true")
	}
}
