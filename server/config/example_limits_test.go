package config

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// The example shows the operator-steered limit keys with working values.
func TestExampleShowsLimitOperations(t *testing.T) {
	t.Parallel()
	cfg, err := LoadExample()
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Limits
	if l.OverrideTTL.D() != time.Second || l.LegacyHeaders {
		t.Errorf("override_ttl %s legacy_headers %v, want 1s and false", l.OverrideTTL.D(), l.LegacyHeaders)
	}
	if len(l.Overrides) != 1 {
		t.Fatalf("overrides = %d, want 1", len(l.Overrides))
	}
	got := l.Overrides[0].Ratelimit(l.Scenes["team"].Subject)
	if got.ID() != "team:chat-qpm:team:enterprise-demo" || len(got.Limits) != 1 || got.Limits[0] != ratelimit.PerMinute(6000) {
		t.Errorf("override = %+v", got)
	}
	export := l.Scenes["team"].Policies["dataset-export"]
	if export.InFlight == nil || export.InFlight.Limit() != (ratelimit.InFlight{Max: 5, TTL: 10 * time.Minute}) {
		t.Errorf("dataset-export in_flight = %+v, want 5 with a 10m lease", export.InFlight)
	}
	if l.Envoy[0].Name != "edge-ip" {
		t.Errorf("first envoy rule named %q, want edge-ip (for replaces)", l.Envoy[0].Name)
	}
}
