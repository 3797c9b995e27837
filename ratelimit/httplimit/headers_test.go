package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	perMin := ratelimit.PerMinute(100)
	perHour := ratelimit.PerHour(1000)
	tests := []struct {
		name   string
		policy string
		d      ratelimit.Decision
		legacy bool
		want   map[string]string
	}{
		{name: "allowed", policy: "api", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Allowed: true, Used: 58, Remaining: 42, ResetAfter: 17 * time.Second}}),
			want: map[string]string{"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=42;t=17`}},
		{name: "allowed legacy", policy: "api", legacy: true, d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Allowed: true, Used: 58, Remaining: 42, ResetAfter: 16100 * time.Millisecond}}),
			want: map[string]string{"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=42;t=17`,
				"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "17"}},
		{name: "denied rounds Retry-After up", policy: "api", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Used: 100, ResetAfter: 2001 * time.Millisecond, RetryAfter: 2001 * time.Millisecond}}),
			want: map[string]string{"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=0;t=3`, "Retry-After": "3"}},
		{name: "tightest of several limits", policy: "api", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Allowed: true, Remaining: 99, ResetAfter: time.Minute},
			{Limit: perHour, Allowed: true, Remaining: 3, ResetAfter: 30 * time.Minute}}),
			want: map[string]string{"RateLimit-Policy": `"api";q=1000;w=3600`, "RateLimit": `"api";r=3;t=1800`}},
		{name: "denying limit wins", policy: "api", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Remaining: 0, ResetAfter: 10 * time.Second, RetryAfter: 10 * time.Second},
			{Limit: perHour, Allowed: true, Remaining: 900, ResetAfter: time.Hour}}),
			want: map[string]string{"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=0;t=10`, "Retry-After": "10"}},
		{name: "sub-second window", policy: "burst", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: ratelimit.Per(5, 250*time.Millisecond), Allowed: true, Remaining: 4, ResetAfter: 250 * time.Millisecond}}),
			want: map[string]string{"RateLimit-Policy": `"burst";q=5;w=1`, "RateLimit": `"burst";r=4;t=1`}},
		{name: "name escaped as sf-string", policy: "a\"b\\c%d\né", d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Allowed: true, Remaining: 1}}),
			want: map[string]string{"RateLimit-Policy": `"a\"b\\c%25d%0A%C3%A9";q=100;w=60`, "RateLimit": `"a\"b\\c%25d%0A%C3%A9";r=1;t=0`}},
		{name: "long name outgrows the buffer", policy: strings.Repeat("x", 200), legacy: true, d: ratelimit.Decide([]ratelimit.Result{
			{Limit: perMin, Remaining: 0, ResetAfter: time.Second, RetryAfter: time.Second}}),
			want: map[string]string{"RateLimit-Policy": `"` + strings.Repeat("x", 200) + `";q=100;w=60`,
				"RateLimit": `"` + strings.Repeat("x", 200) + `";r=0;t=1`, "Retry-After": "1",
				"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"}},
		{name: "no results writes nothing", policy: "api", d: ratelimit.Decision{}, legacy: true, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			httplimit.SetHeaders(h, tt.policy, tt.d, tt.legacy)
			if got := fields(h, allFields...); !equalFields(got, tt.want) || len(h) != len(tt.want) {
				t.Errorf("SetHeaders = %v, want %v", h, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "1"}, {-time.Second, "1"}, {time.Nanosecond, "1"}, {time.Second, "1"},
		{time.Second + time.Millisecond, "2"}, {59500 * time.Millisecond, "60"}, {time.Hour, "3600"},
	}
	for _, tt := range tests {
		if got := httplimit.RetryAfter(tt.in); got != tt.want {
			t.Errorf("RetryAfter(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriteProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		p          httplimit.Problem
		wantStatus int
		wantBody   string
	}{
		{name: "full", p: httplimit.Problem{Type: "https://example.com/probs/x", Title: "Bad thing", Status: 400, Detail: "field \"a\" <b>"},
			wantStatus: 400, wantBody: `{"type":"https://example.com/probs/x","title":"Bad thing","status":400,"detail":"field \"a\" \u003cb\u003e"}` + "\n"},
		{name: "title from status", p: httplimit.Problem{Status: 404}, wantStatus: 404, wantBody: `{"title":"Not Found","status":404}` + "\n"},
		{name: "zero is 500", wantStatus: 500, wantBody: `{"title":"Internal Server Error","status":500}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			httplimit.WriteProblem(w, tt.p)
			if w.Code != tt.wantStatus || w.Body.String() != tt.wantBody || w.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("got %d %q %q, want %d %q application/problem+json", w.Code, w.Header().Get("Content-Type"), w.Body.String(), tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func BenchmarkSetHeaders(b *testing.B) {
	d := ratelimit.Decide([]ratelimit.Result{{Limit: ratelimit.PerMinute(100), Remaining: 0,
		ResetAfter: 17 * time.Second, RetryAfter: 17 * time.Second}})
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		httplimit.SetHeaders(h, "api", d, false)
	}
}
