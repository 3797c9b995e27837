package httplimit

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Options configures ByIP and Middleware. The zero value is the default: on,
// no trusted proxies (the client is always the socket peer), full IPv6
// addresses, only the IETF RateLimit fields, problem+json bodies and
// slog.Default().
type Options struct {
	// Disabled makes the middleware a pass-through (no counting, no
	// headers) unless Force is set. The zero value (false) means enabled.
	// To follow a deployment switch such as USE_IP_LIMIT, set
	// Disabled: !EnabledFromEnv("USE_IP_LIMIT").
	Disabled bool
	// Force applies the limit even when Disabled is set, for routes that
	// must always be limited (login, captcha) while the switch is off.
	// Default false.
	Force bool
	// TrustedProxies are the peers whose forwarding headers are believed
	// (X-Forwarded-For, then X-Real-IP). Nil, the default, trusts no one:
	// the client is always the socket peer. Build it with ParseCIDRs.
	// ByIP and ClientIP use it; a limiter given to Middleware uses it only
	// if its Subject calls ClientIP with these Options.
	TrustedProxies []netip.Prefix
	// IPv6Prefix, when above 0, buckets IPv6 clients by that prefix length
	// (64 puts a whole /64, usually one subscriber, on one counter). 0, the
	// default, keeps the full address. Must be 0..128. Used like
	// TrustedProxies.
	IPv6Prefix int
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset to the IETF fields. Default false.
	LegacyHeaders bool
	// Responder writes refused requests (429 over a limit, 422 for a cost
	// above the quota, 503 when a fail-closed store is down). Nil means
	// DefaultResponder (application/problem+json).
	Responder Responder
	// Logger receives programmer errors (invalid limits or subjects) that
	// the middleware answers with 500. Nil means slog.Default(). ByIP also
	// gives it to its Limiter for store faults.
	Logger *slog.Logger
}

// Validate reports a configuration the middleware cannot use, naming the
// field and the rule. ByIP and Middleware panic with this error.
func (o Options) Validate() error {
	if o.IPv6Prefix < 0 || o.IPv6Prefix > 128 {
		return fmt.Errorf("httplimit: Options.IPv6Prefix must be 0..128, got %d", o.IPv6Prefix)
	}
	for i, p := range o.TrustedProxies {
		if !p.IsValid() {
			return fmt.Errorf("httplimit: Options.TrustedProxies[%d] is not a valid prefix", i)
		}
	}
	return nil
}

func (o Options) active() bool { return !o.Disabled || o.Force }

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

func (o Options) responder() Responder {
	if o.Responder == nil {
		return DefaultResponder
	}
	return o.Responder
}

// ParseCIDRs parses trusted proxy entries: CIDRs such as "10.0.0.0/8" or
// "fd00::/8", or single addresses such as "127.0.0.1" (taken as /32 or
// /128). Prefixes are masked to their network, and IPv4-mapped IPv6 prefixes
// (::ffff:10.0.0.0/104) become IPv4 ones, because client addresses are
// compared unmapped. The error names the first bad entry and its position.
func ParseCIDRs(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for i, s := range entries {
		p, err := parseCIDR(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %d (%q) is neither a CIDR nor an IP address: %w", i, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseCIDR(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, err
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("zone %q not allowed", a.Zone())
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// EnabledFromEnv reports whether the environment variable name is set to a
// true value ("1", "t", "true", "on", "yes", any case). Unset, empty or
// anything else is false, so a limit switched by it stays off until a
// deployment turns it on, like the USE_IP_LIMIT switch it is meant for.
func EnabledFromEnv(name string) bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv(name)))
	if v == "on" || v == "yes" {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
