package budget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func TestConfigValidate(t *testing.T) {
	ok := budget.Limits{Requests: budget.PerMinute(10)}
	tests := []struct {
		name string
		cfg  budget.Config
		want string // "" for valid; else the start of the error after "budget: "
	}{
		{"requests only", budget.Config{Limits: ok}, ""},
		{"per tenant only", budget.Config{PerTenant: ok}, ""},
		{"in flight only", budget.Config{Limits: budget.Limits{InFlight: 3}}, ""},
		{"everything", budget.Config{Limits: budget.Limits{Requests: budget.PerMinute(500), Units: map[string]budget.Rate{"tokens": {Quota: 200_000, Window: time.Minute, Burst: 50_000}}, InFlight: 50},
			PerTenant: ok, Share: budget.Share{Floor: 0.1, Ceiling: 0.5, Reserve: 0.2}, LeaseTTL: time.Minute}, ""},
		{"empty", budget.Config{}, "Limits must set at least one limit"},
		{"quota", budget.Config{Limits: budget.Limits{Requests: budget.Rate{Quota: -1, Window: time.Second}}}, "Limits.Requests.Quota must be a positive integer"},
		{"window", budget.Config{Limits: budget.Limits{Requests: budget.Rate{Quota: 1}}}, "Limits.Requests.Window must be at least 1ms"},
		{"unit quota", budget.Config{Limits: budget.Limits{Units: map[string]budget.Rate{"tokens": {}}}}, "Limits.Units[tokens].Quota must be a positive integer"},
		{"unit burst", budget.Config{PerTenant: budget.Limits{Units: map[string]budget.Rate{"tokens": {Quota: 1, Window: time.Second, Burst: -2}}}}, "PerTenant.Units[tokens].Burst must not be negative"},
		{"reserved unit", budget.Config{Limits: budget.Limits{Units: map[string]budget.Rate{"requests": budget.PerSecond(1)}}}, "Limits.Units[requests] is reserved"},
		{"unit name", budget.Config{Limits: budget.Limits{Units: map[string]budget.Rate{"Tokens!": budget.PerSecond(1)}}}, "Limits.Units[Tokens!] unit names must match"},
		{"in flight", budget.Config{Limits: budget.Limits{InFlight: -1}, PerTenant: ok}, "Limits.InFlight must not be negative"},
		{"floor", budget.Config{Limits: ok, Share: budget.Share{Floor: 1.5}}, "Share.Floor must be a fraction in [0, 1]"},
		{"ceiling below floor", budget.Config{Limits: ok, Share: budget.Share{Floor: 0.5, Ceiling: 0.2}}, "Share.Ceiling must be at least Share.Floor"},
		{"reserve without floor", budget.Config{Limits: ok, Share: budget.Share{Reserve: 0.2}}, "Share.Reserve is only used with a Share.Floor"},
		{"reserve of everything", budget.Config{Limits: ok, Share: budget.Share{Floor: 0.1, Reserve: 0.95}}, "Share.Reserve leaves no shared capacity of requests"},
		{"share without totals", budget.Config{PerTenant: ok, Share: budget.Share{Ceiling: 0.5}}, "Share needs total Limits"},
		{"lease", budget.Config{Limits: ok, LeaseTTL: 1500 * time.Microsecond}, "LeaseTTL must be a non-negative whole number of milliseconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.want != "" && err == nil:
				t.Errorf("Validate: nil, want %q", tc.want)
			case tc.want != "" && !strings.HasPrefix(err.Error(), "budget: "+tc.want):
				t.Errorf("Validate: %q, want it to start with %q", err, "budget: "+tc.want)
			case err != nil && (!errors.Is(err, budget.ErrInvalidConfig) || !errors.Is(err, ratelimit.ErrInvalidArgument)):
				t.Errorf("Validate: %v does not match ErrInvalidConfig and ratelimit.ErrInvalidArgument", err)
			}
		})
	}
}

func TestDefineAndReplace(t *testing.T) {
	s := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer s.Close()
	b, err := budget.New(budget.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := budget.New(budget.Options{}); !errors.Is(err, budget.ErrInvalidConfig) {
		t.Errorf("New without a store: %v, want ErrInvalidConfig", err)
	}
	cfg := budget.Config{Limits: budget.Limits{Requests: budget.PerSecond(1)}}
	if err := b.Define("bad name", cfg); !errors.Is(err, budget.ErrInvalidConfig) {
		t.Errorf("Define with a bad name: %v, want ErrInvalidConfig", err)
	}
	if err := b.Define("a", cfg); err != nil {
		t.Fatal(err)
	}
	err = b.Replace(map[string]budget.Config{"b": cfg, "c": {}})
	if err == nil || !strings.HasPrefix(err.Error(), "budget: c.Limits ") {
		t.Errorf("Replace with an invalid budget: %v, want an error naming c.Limits", err)
	}
	if got := b.Names(); len(got) != 1 || got[0] != "a" {
		t.Errorf("Names after a failed Replace = %v, want [a] (unchanged)", got)
	}
	if err := b.Replace(map[string]budget.Config{"b": cfg, "c": cfg}); err != nil {
		t.Fatal(err)
	}
	if got := b.Names(); strings.Join(got, ",") != "b,c" {
		t.Errorf("Names = %v, want [b c]", got)
	}
	if _, ok := b.Config("a"); ok {
		t.Errorf("Config(a) found after Replace without it")
	}
	if !b.Remove("b") || b.Remove("b") {
		t.Errorf("Remove(b) twice: want true then false")
	}
}
