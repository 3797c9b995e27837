package clock_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestFakeTimers checks that Advance fires exactly the due timers, at their
// deadlines, and that a stopped timer never fires.
func TestFakeTimers(t *testing.T) {
	c := clock.NewFake(epoch)
	late := c.NewTimer(2 * time.Second)
	early := c.NewTimer(time.Second)
	stopped := c.NewTimer(time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer = false, want true")
	}
	if got := c.Waiters(); got != 2 {
		t.Fatalf("Waiters = %d, want 2", got)
	}
	c.Advance(1500 * time.Millisecond)
	if got := <-early.C(); !got.Equal(epoch.Add(time.Second)) {
		t.Errorf("early fired at %v, want %v", got, epoch.Add(time.Second))
	}
	select {
	case <-late.C():
		t.Error("late fired before its deadline")
	case <-stopped.C():
		t.Error("a stopped timer fired")
	default:
	}
	c.Set(epoch.Add(2 * time.Second))
	if got := <-late.C(); !got.Equal(epoch.Add(2 * time.Second)) {
		t.Errorf("late fired at %v, want %v", got, epoch.Add(2*time.Second))
	}
	if early.Stop() {
		t.Error("Stop of a fired timer = true, want false")
	}
	if now := c.Now(); !now.Equal(epoch.Add(2 * time.Second)) {
		t.Errorf("Now = %v, want %v", now, epoch.Add(2*time.Second))
	}
}

// TestFakeBlockUntil checks that BlockUntil returns once the code under
// test has started waiting, and that a non-positive timer fires at once.
func TestFakeBlockUntil(t *testing.T) {
	c := clock.NewFake(epoch)
	if got := <-c.NewTimer(0).C(); !got.Equal(epoch) {
		t.Errorf("zero timer fired at %v, want %v", got, epoch)
	}
	done := make(chan time.Time)
	go func() { done <- <-c.NewTimer(time.Minute).C() }()
	c.BlockUntil(1)
	c.Advance(time.Minute)
	if got := <-done; !got.Equal(epoch.Add(time.Minute)) {
		t.Errorf("waiter woke at %v, want %v", got, epoch.Add(time.Minute))
	}
}

func TestFakePending(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	late := f.NewTimer(time.Hour)
	f.NewTimer(time.Minute)
	f.NewTimer(0) // fired at once: not pending
	want := []time.Time{start.Add(time.Minute), start.Add(time.Hour)}
	if got := f.Pending(); !slices.Equal(got, want) {
		t.Fatalf("Pending = %v; want %v", got, want)
	}
	late.Stop()
	f.Advance(time.Minute)
	if got := f.Pending(); len(got) != 0 {
		t.Fatalf("Pending after the stop and the advance = %v; want none", got)
	}
}
