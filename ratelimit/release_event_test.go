package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func TestReleaseIsObserved(t *testing.T) {
	store := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer store.Close()
	rec := &recorder{}
	lim := mustDefine(t, store, ratelimit.Definition[team]{
		Scene:    "team",
		Policy:   func(team) string { return "export" },
		Subject:  func(in team) []string { return []string{"team", in.ID} },
		Limits:   func(team) []ratelimit.Limit { return nil },
		InFlight: func(team) ratelimit.InFlight { return ratelimit.InFlight{Max: 1, TTL: time.Minute} },
	}, ratelimit.WithObserver(rec.observe))
	ctx := context.Background()
	a, err := lim.Acquire(ctx, team{ID: "a"})
	if err != nil || !a.Allowed {
		t.Fatalf("Acquire = %+v, %v", a, err)
	}
	if ev := rec.last(t); ev.Release || !ev.Allowed {
		t.Errorf("acquire event %+v, want an allowed decision", ev)
	}
	for i, want := range []bool{true, false} {
		if _, err := lim.Release(ctx, a.Lease); err != nil {
			t.Fatal(err)
		}
		ev := rec.last(t)
		got := struct {
			scene, policy    string
			release, allowed bool
		}{ev.Scene, ev.Policy, ev.Release, ev.Allowed}
		if got.scene != "team" || got.policy != "export" || !got.release || got.allowed != want || ev.Err != nil {
			t.Errorf("release %d event %+v, want team/export released=%v", i, ev, want)
		}
	}
	if n := len(rec.all()); n != 3 {
		t.Errorf("%d events, want 3 (one acquire, two releases)", n)
	}
}
