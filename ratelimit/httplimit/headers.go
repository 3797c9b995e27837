package httplimit

import (
	"net/http"
	"strconv"
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

// Canonical forms of the field names, so writing them needs no
// canonicalisation (which allocates) on every response.
var (
	keyPolicy          = http.CanonicalHeaderKey(HeaderRateLimitPolicy)
	keyRateLimit       = http.CanonicalHeaderKey(HeaderRateLimit)
	keyRetryAfter      = http.CanonicalHeaderKey(HeaderRetryAfter)
	keyLegacyLimit     = http.CanonicalHeaderKey(HeaderLegacyLimit)
	keyLegacyRemaining = http.CanonicalHeaderKey(HeaderLegacyRemaining)
	keyLegacyReset     = http.CanonicalHeaderKey(HeaderLegacyReset)
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
// The policy name is written as a Structured Field string: '"' and '\' are
// escaped, and '%' and bytes outside printable ASCII become %XX.
// With legacy set it adds X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (seconds until reset, a delta like t, not a Unix time).
// A decision without results writes nothing.
func SetHeaders(h http.Header, policyName string, d ratelimit.Decision, legacy bool) {
	res, ok := d.Tightest()
	if !ok {
		return
	}
	// All values are cut from one string so a response costs two
	// allocations, not one per field.
	var arr [160]byte
	b := appendSFString(arr[:0], policyName)
	nameEnd := len(b)
	b = append(b, ";q="...)
	q0 := len(b)
	b = strconv.AppendInt(b, res.Limit.Quota, 10)
	q1 := len(b)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, max(1, ceilSeconds(res.Limit.Window)), 10)
	p1 := len(b)
	b = append(b, b[:nameEnd]...)
	b = append(b, ";r="...)
	r0 := len(b)
	b = strconv.AppendInt(b, res.Remaining, 10)
	r1 := len(b)
	b = append(b, ";t="...)
	t0 := len(b)
	b = strconv.AppendInt(b, ceilSeconds(res.ResetAfter), 10)
	t1 := len(b)
	b = strconv.AppendInt(b, max(1, ceilSeconds(d.RetryAfter)), 10)
	s := string(b)
	vals := make([]string, 6)
	set := func(i int, key, v string) { vals[i] = v; h[key] = vals[i : i+1 : i+1] }
	set(0, keyPolicy, s[:p1])
	set(1, keyRateLimit, s[p1:t1])
	if !d.Allowed {
		set(2, keyRetryAfter, s[t1:])
	}
	if legacy {
		set(3, keyLegacyLimit, s[q0:q1])
		set(4, keyLegacyRemaining, s[r0:r1])
		set(5, keyLegacyReset, s[t0:t1])
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

// appendSFString appends s as a Structured Field string (RFC 9651 3.3.3):
// quoted, with '"' and '\' escaped. Bytes outside printable ASCII, which the
// format cannot carry, are written as %XX (and '%' itself as %25) so
// distinct names stay distinct.
func appendSFString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '%' || c < 0x20 || c > 0x7e:
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
