package server

import (
	"strings"
	"testing"
)

func TestIntegerForm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lit  string
		want string // "" when not an integer or too long to build
		size int64
	}{
		{"777", "777", 3},
		{"777.0", "777", 3},
		{"7.77e2", "777", 3},
		{"7.77E+2", "777", 3},
		{"7770e-1", "777", 3},
		{"77700000e-5", "777", 3},
		{"0.0777e4", "777", 3},
		{"-777.000", "-777", 4},
		{"0", "0", 1},
		{"-0", "0", 1},
		{"0.000", "0", 1},
		{"0e-999999999999999999999", "0", 1},
		{"1e3", "1000", 4},
		{"10e-1", "1", 1},
		{"1.5", "", 0},
		{"7.775e2", "", 0},
		{"1e-5", "", 0},
		{"123456789.1e-1", "", 0},
		{"1e-999999999999999999999", "", 0},
		{"1e255", "1" + strings.Repeat("0", 255), 256},
		{"-1e255", "", 257},
		{"1e256", "", 257},
		{"1e999999999999999999999", "", 1<<40 + 1},
		{"-" + "1" + strings.Repeat("0", 300) + "e-300", "-1", 2},
	}
	for _, tc := range tests {
		got, size, ok := integerForm(tc.lit)
		if ok != (tc.size > 0) || got != tc.want || size != tc.size {
			t.Errorf("integerForm(%.40q) = %.40q, %d, %v; want %.40q, %d", tc.lit, got, size, ok, tc.want, tc.size)
		}
	}
}

// TestSubjectNumbersShareOneCounter: a number is one subject however it is
// written, and the same as its decimal string; 1 per minute admits only
// the first of them.
func TestSubjectNumbersShareOneCounter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	first := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":777}}`)
	if first.status != 200 {
		t.Fatalf("777: %d %s", first.status, first.raw)
	}
	for _, v := range []string{`777.0`, `7.77e2`, `7770E-1`, `"777"`} {
		if r := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":`+v+`}}`); r.status != 429 {
			t.Errorf("%s after 777: %d %s, want 429 (one counter)", v, r.status, r.raw)
		}
	}
	for _, v := range []string{`-0`, `0.0`} {
		h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":0}}`)
		if r := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":`+v+`}}`); r.status != 429 {
			t.Errorf("%s after 0: %d %s, want 429 (one counter)", v, r.status, r.raw)
		}
	}
}

// TestSubjectValueRules: a number that is not an integer and a value over
// maxSubjectValueBytes are refused with a 400 naming the field and the
// rule, and count nothing.
func TestSubjectValueRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	at, over := strings.Repeat("a", maxSubjectValueBytes), strings.Repeat("a", maxSubjectValueBytes+1)
	tests := []struct {
		value  string
		status int
		detail string
	}{
		{`1.5`, 400, `subject field "member" must be a string or an integer, got 1.5`},
		{`7.775e2`, 400, `subject field "member" must be a string or an integer, got 7.775e2`},
		{`1e-5`, 400, `subject field "member" must be a string or an integer, got 1e-5`},
		{`"` + over + `"`, 400, `subject field "member" must be at most 256 bytes, got 257`},
		{`1e256`, 400, `subject field "member" must be at most 256 bytes, got 257`},
		{`-1e300`, 400, `subject field "member" must be at most 256 bytes, got 302`},
		{`"` + at + `"`, 200, ""},
		{`1e255`, 200, ""},
	}
	for _, tc := range tests {
		body := `{"subject":{"member":` + tc.value + `}}`
		r := h.do("POST", "/v1/limits/member/export-usage", "", body)
		if r.status != tc.status || (tc.detail != "" && r.body["detail"] != tc.detail) {
			t.Errorf("member %.40s: %d %v, want %d %q", tc.value, r.status, r.body["detail"], tc.status, tc.detail)
		}
	}
	// Out-link has two fields: the second is named.
	r := h.do("POST", "/v1/limits/out-link/request", "", `{"subject":{"out-link":"L","uid":2.5}}`)
	if r.status != 400 || r.body["detail"] != `subject field "uid" must be a string or an integer, got 2.5` {
		t.Errorf("uid 2.5: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/limits/out-link/request/peek", "", `{"subject":{"out-link":"L","uid":"2.5"}}`); remaining(r) != 2 {
		t.Errorf("after the refusal: %s, want nothing counted", r.raw)
	}
}
