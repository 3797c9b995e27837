package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/sluicehq/sluice/ratelimit"
)

// answerStore answers every Consume with a fixed decision or error.
type answerStore struct {
	d   ratelimit.Decision
	err error
}

func (s answerStore) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	return s.d, s.err
}

func TestCheckVerdict(t *testing.T) {
	t.Parallel()
	deny := ratelimit.Decide([]ratelimit.Result{{Limit: ratelimit.PerSecond(1), Allowed: false}})
	allow := ratelimit.Decide([]ratelimit.Result{{Limit: ratelimit.PerSecond(1), Allowed: true}})
	fault := &ratelimit.StoreError{Op: "consume", Err: errors.New("down")}
	tests := []struct {
		name        string
		store       answerStore
		mode        ratelimit.FailureMode
		shadow      bool
		quota       int64
		wantAllowed bool
		wantFault   bool
		wantErr     error
	}{
		{name: "allowed", store: answerStore{d: allow}, quota: 1, wantAllowed: true},
		{name: "denied", store: answerStore{d: deny}, quota: 1},
		{name: "shadow denial allowed", store: answerStore{d: deny}, shadow: true, quota: 1, wantAllowed: true},
		{name: "fault fail-open", store: answerStore{err: fault}, quota: 1, wantAllowed: true, wantFault: true},
		{name: "fault fail-closed", store: answerStore{err: fault}, mode: ratelimit.FailClosed, quota: 1, wantFault: true},
		{name: "invalid argument never masked", store: answerStore{err: fault}, quota: 0, wantErr: ratelimit.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var events []ratelimit.Event
			l, err := ratelimit.Define(tt.store, ratelimit.Definition[string]{
				Scene:       "test",
				Subject:     func(id string) []string { return []string{"id", id} },
				Limits:      func(string) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerSecond(tt.quota)} },
				FailureMode: tt.mode,
				Shadow:      tt.shadow,
			}, ratelimit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
				ratelimit.WithObserver(func(e ratelimit.Event) { events = append(events, e) }))
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.Check(context.Background(), "a")
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Check error = %v, want %v", err, tt.wantErr)
			}
			if v.Allowed != tt.wantAllowed || (v.Fault != nil) != tt.wantFault || v.Shadow != tt.shadow || v.Policy != "default" {
				t.Errorf("Check = %+v, want Allowed=%v fault=%v shadow=%v policy=default", v, tt.wantAllowed, tt.wantFault, tt.shadow)
			}
			if len(events) != 1 || events[0].Allowed != v.Allowed || events[0].FailureModeApplied != tt.wantFault {
				t.Errorf("events = %+v, want one with Allowed=%v FailureModeApplied=%v", events, v.Allowed, tt.wantFault)
			}
			if got, _ := l.Allow(context.Background(), "a"); got != v.Allowed {
				t.Errorf("Allow = %v, want the verdict's %v", got, v.Allowed)
			}
		})
	}
}
