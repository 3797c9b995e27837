package budget

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Hint is what an upstream's response says about its limits: whether it
// refused for being over them, until when, and what remains of each unit.
type Hint struct {
	// Limited is true when the response refused for being over a limit:
	// status 429, or 503 with a Retry-After.
	Limited bool
	// ClosedUntil is when the upstream said to come back (Retry-After);
	// zero when it did not say.
	ClosedUntil time.Time
	// Limit is each unit's quota as the upstream reports it.
	Limit map[string]int64
	// Remaining is what is left of each unit until its reset.
	Remaining map[string]int64
	// Reset is when each unit's quota is next restored.
	Reset map[string]time.Time
}

// IsZero reports whether h says nothing.
func (h Hint) IsZero() bool {
	return !h.Limited && h.ClosedUntil.IsZero() && len(h.Limit) == 0 && len(h.Remaining) == 0 && len(h.Reset) == 0
}

// Until is the latest time the hint says nothing more may be sent: the
// later of ClosedUntil and the reset of every unit with nothing
// remaining. It is zero when the hint closes nothing.
func (h Hint) Until() time.Time {
	out := h.ClosedUntil
	for u, n := range h.Remaining {
		if r, ok := h.Reset[u]; ok && n <= 0 && r.After(out) {
			out = r
		}
	}
	return out
}

func (h *Hint) set(m *map[string]int64, unit string, n int64) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[unit] = n
}

func (h *Hint) reset(unit string, at time.Time) {
	if h.Reset == nil {
		h.Reset = map[string]time.Time{}
	}
	h.Reset[unit] = at
}

// FromResponse reads the limits an upstream reports in resp's headers,
// taking now as the time the response arrived:
//
//   - status 429 (or 503) with Retry-After, in seconds or as an HTTP date;
//   - the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers):
//     RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds),
//     the dictionary form "RateLimit: limit=100, remaining=0, reset=30",
//     and the structured form "RateLimit: "default";r=0;t=30" with
//     "RateLimit-Policy: "default";q=100;w=60" (a policy's qu parameter
//     names the unit: "requests", "content-bytes" becomes "bytes");
//   - x-ratelimit-{limit,remaining,reset}-<unit>, as LLM APIs send them
//     ("x-ratelimit-remaining-tokens: 0", "x-ratelimit-reset-tokens:
//     6m0s"; resets are Go-style durations such as "1s", "20ms" or
//     "1m30.5s", or plain seconds);
//   - anthropic-ratelimit-<unit>-{limit,remaining,reset} (resets as RFC
//     3339 times);
//   - GitHub's x-ratelimit-limit, x-ratelimit-remaining and
//     x-ratelimit-reset (unix seconds; a value below 10^9 is read as
//     seconds from now, as some APIs send it), for the unit "requests".
//
// Values it cannot read are skipped. FromResponse(nil, now) is the zero
// Hint.
func FromResponse(resp *http.Response, now time.Time) Hint {
	var h Hint
	if resp == nil {
		return h
	}
	hd := resp.Header
	ra, raOK := retryAfter(hd.Get("Retry-After"), now)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		h.Limited = true
	case resp.StatusCode == http.StatusServiceUnavailable && raOK:
		h.Limited = true
	}
	if h.Limited && raOK {
		h.ClosedUntil = now.Add(ra)
	}
	ietfFields(&h, hd, now)
	ietfStructured(&h, hd, now)
	xRateLimit(&h, hd, now)
	anthropic(&h, hd)
	return h
}

// anthropic reads anthropic-ratelimit-<unit>-{limit,remaining,reset},
// the reset an RFC 3339 time.
func anthropic(h *Hint, hd http.Header) {
	for name, vals := range hd {
		rest, ok := strings.CutPrefix(strings.ToLower(name), "anthropic-ratelimit-")
		if !ok || len(vals) == 0 {
			continue
		}
		i := strings.LastIndexByte(rest, '-')
		if i <= 0 {
			continue
		}
		unit, kind, v := rest[:i], rest[i+1:], strings.TrimSpace(vals[0])
		switch kind {
		case "limit", "remaining":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			if kind == "limit" {
				h.set(&h.Limit, unit, n)
			} else {
				h.set(&h.Remaining, unit, n)
			}
		case "reset":
			if at, err := time.Parse(time.RFC3339, v); err == nil {
				h.reset(unit, at)
			}
		}
	}
}

// retryAfter reads Retry-After: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(max(secs, 0)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// ietfFields reads the older RateLimit-Limit, -Remaining, -Reset fields.
func ietfFields(h *Hint, hd http.Header, now time.Time) {
	if n, ok := firstInt(hd.Get("RateLimit-Limit")); ok {
		h.set(&h.Limit, Requests, n)
	}
	if n, ok := firstInt(hd.Get("RateLimit-Remaining")); ok {
		h.set(&h.Remaining, Requests, n)
	}
	if n, ok := firstInt(hd.Get("RateLimit-Reset")); ok {
		h.reset(Requests, now.Add(time.Duration(max(n, 0))*time.Second))
	}
}

// ietfStructured reads the RateLimit field in either of its later forms:
// a dictionary (limit=, remaining=, reset=) or a list of named policies
// with r= (remaining) and t= (seconds to reset) parameters, their quota
// and unit taken from RateLimit-Policy. When several policies are listed,
// the one with the least remaining wins for its unit.
func ietfStructured(h *Hint, hd http.Header, now time.Time) {
	v := strings.Join(hd.Values("RateLimit"), ",")
	if v == "" {
		return
	}
	units, quotas := policies(strings.Join(hd.Values("RateLimit-Policy"), ","))
	for _, item := range splitList(v) {
		name, params := parseItem(item)
		if name == "" { // dictionary form: every member is a parameter
			dictMember(h, item, now)
			continue
		}
		unit := units[name]
		if unit == "" {
			unit = Requests
		}
		r, hasR := params["r"]
		if hasR {
			if old, ok := h.Remaining[unit]; ok && old < r {
				continue // a tighter policy of the same unit was read
			}
			h.set(&h.Remaining, unit, r)
			if q, ok := quotas[name]; ok {
				h.set(&h.Limit, unit, q)
			}
		}
		if t, ok := params["t"]; ok {
			h.reset(unit, now.Add(time.Duration(max(t, 0))*time.Second))
		}
	}
}

func dictMember(h *Hint, item string, now time.Time) {
	k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
	if !ok {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return
	}
	switch strings.TrimSpace(k) {
	case "limit":
		h.set(&h.Limit, Requests, n)
	case "remaining":
		h.set(&h.Remaining, Requests, n)
	case "reset":
		h.reset(Requests, now.Add(time.Duration(max(n, 0))*time.Second))
	}
}

// policies reads RateLimit-Policy: each named policy's unit and quota.
func policies(v string) (units map[string]string, quotas map[string]int64) {
	units, quotas = map[string]string{}, map[string]int64{}
	for _, item := range splitList(v) {
		name, params := parseItem(item)
		if name == "" {
			continue
		}
		if q, ok := params["q"]; ok {
			quotas[name] = q
		}
		if u := strParam(item, "qu"); u != "" {
			units[name] = unitOf(u)
		}
	}
	return units, quotas
}

// unitOf maps an IETF quota unit to a budget unit name.
func unitOf(qu string) string {
	switch qu {
	case "content-bytes":
		return "bytes"
	case "concurrent-requests":
		return "concurrent"
	}
	return qu
}

// parseItem reads a structured-field list item: a string or token name
// and its integer parameters. A dictionary member (key=value) has no
// name.
func parseItem(item string) (string, map[string]int64) {
	parts := strings.Split(strings.TrimSpace(item), ";")
	name := strings.TrimSpace(parts[0])
	if strings.Contains(name, "=") {
		return "", nil
	}
	name = strings.Trim(name, `"`)
	params := map[string]int64{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			params[k] = n
		}
	}
	return name, params
}

func strParam(item, key string) string {
	for _, p := range strings.Split(item, ";")[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// splitList splits a field value at commas outside quoted strings.
func splitList(v string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func firstInt(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// xRateLimit reads x-ratelimit-* headers: per unit with a suffix (LLM
// APIs), or without one (GitHub and others: requests).
func xRateLimit(h *Hint, hd http.Header, now time.Time) {
	for name, vals := range hd {
		lower := strings.ToLower(name)
		rest, ok := strings.CutPrefix(lower, "x-ratelimit-")
		if !ok || len(vals) == 0 {
			continue
		}
		kind, unit, _ := strings.Cut(rest, "-")
		if unit == "" {
			unit = Requests
		}
		v := strings.TrimSpace(vals[0])
		switch kind {
		case "limit":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				h.set(&h.Limit, unit, n)
			}
		case "remaining":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				h.set(&h.Remaining, unit, n)
			}
		case "reset":
			if at, ok := resetAt(v, strings.Contains(rest, "-"), now); ok {
				h.reset(unit, at)
			}
		}
	}
}

// resetAt reads a reset value: a duration ("6m0s", "20ms"), or plain
// seconds; without a unit suffix in the header name a large integer is a
// unix time (GitHub).
func resetAt(v string, suffixed bool, now time.Time) (time.Time, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if !suffixed && n >= 1_000_000_000 {
			return time.Unix(n, 0), true
		}
		return now.Add(time.Duration(max(n, 0)) * time.Second), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return now.Add(time.Duration(f * float64(time.Second))), true
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(d), true
	}
	return time.Time{}, false
}
