package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrRefused is matched (errors.Is) by every *RefusedError.
var ErrRefused = errors.New("webhook: address refused")

// RefusedError says the guard refused to connect to an address.
type RefusedError struct {
	Addr   netip.Addr
	Reason string // such as "loopback"
	// Setting is what allows the address (Guard.AllowSetting); empty
	// means "Guard.Allow".
	Setting string
}

func (e *RefusedError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "Guard.Allow"
	}
	return fmt.Sprintf("webhook: refusing to connect to %s (%s address; allow it with %s)", e.Addr, e.Reason, setting)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Guard decides which addresses deliveries may connect to. The zero value
// refuses every range in Refused and allows the rest of the internet.
type Guard struct {
	// Allow lists prefixes allowed even though they fall in a refused
	// range, such as 10.20.0.0/16 for receivers inside the network.
	// Allowing a prefix that holds a metadata endpoint exposes it.
	Allow []netip.Prefix
	// Allowed, when set, is called on every check and its prefixes are
	// allowed as Allow's are: for a program whose allowed networks change
	// while it runs (the server reloads webhooks.allow_networks). A
	// change applies to the next connection; one already open is kept
	// until it closes (idle connections close after 90s).
	Allowed func() []netip.Prefix
	// AllowAll turns the guard off. Meant for tests whose receivers listen
	// on 127.0.0.1; never set it for URLs from users.
	AllowAll bool
	// AllowSetting names, in a refusal, where whoever runs the program
	// allows an address: a program that fills Allow from its own
	// configuration names that key (the server says
	// "webhooks.allow_networks"). Default "Guard.Allow".
	AllowSetting string
}

// Range is one refused address range.
type Range struct {
	Prefix netip.Prefix
	Reason string
}

// Refused lists the ranges a Guard refuses. More specific entries come
// first so that an address reports the most telling reason.
var Refused = []Range{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("100::/64"), "reserved"},
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4
// address in their last 32 bits, which is checked instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Check returns nil if a may be connected to, or a *RefusedError.
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) and NAT64 addresses are
// checked as the IPv4 address they reach.
func (g Guard) Check(a netip.Addr) error {
	if g.AllowAll {
		return nil
	}
	a = a.Unmap().WithZone("")
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, p := range g.Allow {
		if p.Contains(a) {
			return nil
		}
	}
	if g.Allowed != nil {
		for _, p := range g.Allowed() {
			if p.Contains(a) {
				return nil
			}
		}
	}
	if !a.IsValid() {
		return &RefusedError{Addr: a, Reason: "invalid", Setting: g.AllowSetting}
	}
	for _, r := range Refused {
		if r.Prefix.Contains(a) {
			return &RefusedError{Addr: a, Reason: r.Reason, Setting: g.AllowSetting}
		}
	}
	return nil
}

// Control checks the address a socket is about to connect to. Set it as
// net.Dialer.Control: it runs after name resolution, on every address
// tried, so a name that resolves to a refused address is refused whatever
// the DNS answered earlier.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: unexpected dial address %q: %w", address, err)
	}
	return g.Check(ap.Addr())
}
