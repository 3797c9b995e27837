package webhook

import (
	"net/netip"
	"sync/atomic"
	"testing"
)

// Guard.Allowed is read on every check: a change applies at once.
func TestGuardAllowedIsReadEachCheck(t *testing.T) {
	t.Parallel()
	var allowed atomic.Pointer[[]netip.Prefix]
	allowed.Store(&[]netip.Prefix{})
	g := Guard{Allowed: func() []netip.Prefix { return *allowed.Load() }}
	a := netip.MustParseAddr("10.20.0.5")
	if err := g.Check(a); err == nil {
		t.Fatal("10.20.0.5 allowed before its network was")
	}
	allowed.Store(&[]netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")})
	if err := g.Check(a); err != nil {
		t.Fatalf("after allowing 10.20.0.0/16: %v", err)
	}
	allowed.Store(&[]netip.Prefix{})
	if err := g.Check(a); err == nil {
		t.Fatal("10.20.0.5 still allowed after its network was removed")
	}
}
