package server

import (
	"encoding/json"
	"strconv"
	"strings"
)

// maxSubjectValueBytes bounds a subject value of the HTTP scene API, so no
// caller can make the store keep huge keys.
const maxSubjectValueBytes = 256

// subjectValue turns one JSON subject value into the id its counter is
// keyed by. A string is taken as it is. A number must be an integer and is
// written in one decimal form, so that 777, 777.0 and 7.77e2 share one
// counter (as the string "777" does). The id is at most
// maxSubjectValueBytes long and not empty.
func subjectValue(field string, raw any) (string, *problem) {
	var id string
	switch v := raw.(type) {
	case string:
		id = v
	case json.Number:
		n, size, ok := integerForm(string(v))
		if !ok {
			return "", badRequest("subject field %q must be a string or an integer, got %s", field, clip(string(v)))
		}
		if size > maxSubjectValueBytes {
			return "", tooLong(field, size)
		}
		id = n
	default:
		return "", badRequest("subject field %q must be a string or a number", field)
	}
	switch {
	case id == "":
		return "", badRequest("subject field %q must not be empty", field)
	case len(id) > maxSubjectValueBytes:
		return "", tooLong(field, int64(len(id)))
	}
	return id, nil
}

func tooLong(field string, size int64) *problem {
	return badRequest("subject field %q must be at most %d bytes, got %d", field, maxSubjectValueBytes, size)
}

// integerForm writes the JSON number lit as a decimal integer without
// leading zeros, a fraction or an exponent ("-0" is "0"), with its length
// in bytes, or reports false when lit is not an integer. The work is linear
// in len(lit): an integer longer than maxSubjectValueBytes is measured but
// never built, so 1e999999999 costs nothing.
func integerForm(lit string) (string, int64, bool) {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp := lit, int64(0)
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		exp = parseExponent(lit[i+1:])
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	// The value is 0.digits × 10^point.
	point := int64(len(whole)-(len(whole+frac)-len(digits))) + exp
	digits = strings.TrimRight(digits, "0")
	switch {
	case digits == "":
		return "0", 1, true
	case point < int64(len(digits)):
		return "", 0, false // a non-zero digit after the point
	}
	size := point
	if neg {
		size++
	}
	if size > maxSubjectValueBytes {
		return "", size, true
	}
	out := digits + strings.Repeat("0", int(point)-len(digits))
	if neg {
		out = "-" + out
	}
	return out, size, true
}

// parseExponent reads a JSON exponent ("+5", "-12", "3"), clamping it far
// beyond any length a body can reach so later sums cannot overflow.
func parseExponent(s string) int64 {
	const bound = 1 << 40
	e, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // out of range: only the sign matters
		if strings.HasPrefix(s, "-") {
			return -bound
		}
		return bound
	}
	return min(max(e, -bound), bound)
}
