package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// Header field names written by SetHeaders.
const (
	HeaderRateLimitPolicy = "RateLimit-Policy"
	HeaderRateLimit       = "RateLimit"
	HeaderRetryAfter      = "Retry-After"
	HeaderLegacyLimit     = "X-RateLimit-Limit"
	HeaderLegacyRemaining = "X-RateLimit-Remaining"
	HeaderLegacyReset     = "X-RateLimit-Reset"
)

// SetHeaders writes d's tightest limit (Decision.Tightest) as the IETF
// draft-ietf-httpapi-ratelimit-headers fields:
//
//	RateLimit-Policy: "<policyName>";q=<quota>;w=<window seconds>
//	RateLimit: "<policyName>";r=<remaining>;t=<seconds until reset>
//
// and, when d is denied, Retry-After in whole seconds rounded up (at least
// 1, so a client never retries at once). Windows and reset times are
// rounded up to whole seconds (w at least 1), because the fields take
// integers and rounding down would invite a retry that is still refused.
// With legacy set it adds X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (seconds until reset, a delta like t, not a Unix time).
// A decision without results writes nothing.
func SetHeaders(h http.Header, policyName string, d ratelimit.Decision, legacy bool) {
	res, ok := d.Tightest()
	if !ok {
		return
	}
	name := sfString(policyName)
	quota := strconv.FormatInt(res.Limit.Quota, 10)
	remaining := strconv.FormatInt(res.Remaining, 10)
	reset := strconv.FormatInt(ceilSeconds(res.ResetAfter), 10)
	window := strconv.FormatInt(max(1, ceilSeconds(res.Limit.Window)), 10)
	h.Set(HeaderRateLimitPolicy, name+";q="+quota+";w="+window)
	h.Set(HeaderRateLimit, name+";r="+remaining+";t="+reset)
	if !d.Allowed {
		h.Set(HeaderRetryAfter, RetryAfter(d.RetryAfter))
	}
	if legacy {
		h.Set(HeaderLegacyLimit, quota)
		h.Set(HeaderLegacyRemaining, remaining)
		h.Set(HeaderLegacyReset, reset)
	}
}

// RetryAfter formats d as a Retry-After value: whole seconds rounded up,
// at least 1.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(max(1, ceilSeconds(d)), 10)
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++ // no overflow: d/time.Second is far below MaxInt64
	}
	return s
}

// sfString serialises s as a Structured Field string (RFC 9651 3.3.3):
// quoted, with '"' and '\' escaped. Bytes outside printable ASCII, which the
// format cannot carry, are written as %XX so distinct names stay distinct.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '%' || c < 0x20 || c > 0x7e:
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
