package httplimit

import (
	"net/http"
	"net/netip"
	"strings"
)

// Unknown is the client IP of a request whose address cannot be resolved.
// All such requests share one counter, so they are limited together rather
// than not at all.
const Unknown = "unknown"

// Bounds on X-Forwarded-For: a longer header is ignored (treated as
// unresolved), so a client cannot make every request cost a long parse.
const (
	// MaxForwardedLen is the longest X-Forwarded-For (all lines together)
	// that is read.
	MaxForwardedLen = 2048
	// MaxForwardedHops is the most X-Forwarded-For entries that are read.
	MaxForwardedHops = 32
)

// ClientIP returns the address a request is limited by:
//
//   - the socket peer (RemoteAddr), unless the peer is in
//     opts.TrustedProxies, because any client can write forwarding headers;
//   - from a trusted peer, X-Forwarded-For read right to left, skipping
//     trusted hops: the first untrusted entry is the client, and when every
//     entry is trusted the left-most one (the request began inside the
//     trusted network). A header longer than MaxForwardedLen, with more than
//     MaxForwardedHops entries, or with an unparseable entry before the
//     client is reached is not guessed at: the result is Unknown (falling
//     back to X-Real-IP here would let a client behind a proxy that passes
//     X-Real-IP through choose its own address);
//   - from a trusted peer without X-Forwarded-For, X-Real-IP (Unknown if
//     it does not parse), and without either header the peer itself.
//
// Addresses are normalised: IPv6 zone stripped, IPv4-mapped IPv6 unmapped,
// canonical text. With opts.IPv6Prefix set, IPv6 addresses become their
// masked prefix, such as "2001:db8:1:2::/64". An unparseable RemoteAddr
// gives Unknown.
func ClientIP(r *http.Request, opts Options) string {
	a, ok := resolve(r, opts.TrustedProxies)
	if !ok {
		return Unknown
	}
	if a.Is6() && opts.IPv6Prefix > 0 && opts.IPv6Prefix < 128 {
		return netip.PrefixFrom(a, opts.IPv6Prefix).Masked().String()
	}
	return a.String()
}

func resolve(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, ok := parseHost(r.RemoteAddr)
	if !ok || !isTrusted(peer, trusted) {
		return peer, ok
	}
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		return fromForwarded(xff, trusted)
	}
	if xr := r.Header.Get("X-Real-IP"); xr != "" {
		return parseHost(strings.TrimSpace(xr))
	}
	return peer, true
}

// fromForwarded walks X-Forwarded-For right to left. lines are the header's
// field lines in order; together they form one comma-separated list.
func fromForwarded(lines []string, trusted []netip.Prefix) (netip.Addr, bool) {
	size, hops := len(lines)-1, len(lines)-1 // separators between lines
	for _, l := range lines {
		size += len(l)
		hops += strings.Count(l, ",")
	}
	if size > MaxForwardedLen || hops+1 > MaxForwardedHops {
		return netip.Addr{}, false
	}
	var last netip.Addr
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			var entry string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				rest, entry = rest[:j], rest[j+1:]
			} else {
				rest, entry = "", rest
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue // empty list elements are allowed and ignored (RFC 9110 5.6.1)
			}
			a, ok := parseHost(entry)
			if !ok {
				return netip.Addr{}, false
			}
			if !isTrusted(a, trusted) {
				return a, true
			}
			last = a
		}
	}
	return last, last.IsValid()
}

// parseHost parses "ip", "ip:port", "[ipv6]" or "[ipv6]:port" and
// normalises the address. The form is picked before parsing so the common
// cases parse once, without building an error.
func parseHost(s string) (netip.Addr, bool) {
	var a netip.Addr
	var err error
	switch {
	case len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']':
		if a, err = netip.ParseAddr(s[1 : len(s)-1]); err == nil && !a.Is6() {
			return netip.Addr{}, false
		}
	case strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1:
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
