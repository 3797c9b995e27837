package ratelimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

func TestAdmitRequestValidate(t *testing.T) {
	t.Parallel()
	lim := ratelimit.PerMinute(5)
	in := ratelimit.InFlight{Max: 1, TTL: time.Second}
	r := func(key string, cost int64) ratelimit.Request {
		return ratelimit.Request{Key: key, Limit: lim, Cost: cost}
	}
	tests := []struct {
		name string
		req  ratelimit.AdmitRequest
		want string // "" for valid
	}{
		{"gate only", ratelimit.AdmitRequest{Gates: []string{"g"}}, ""},
		{"everything", ratelimit.AdmitRequest{Gates: []string{"g"}, Leases: []ratelimit.LeaseRequest{{Key: "l", InFlight: in}},
			Groups: []ratelimit.RequestGroup{{Requests: []ratelimit.Request{r("a", 1)}, Fallback: []ratelimit.Request{r("a", 1)}}, {Requests: []ratelimit.Request{r("b", 1)}}}}, ""},
		{"nothing", ratelimit.AdmitRequest{}, "must name at least one"},
		{"empty gate", ratelimit.AdmitRequest{Gates: []string{""}}, "AdmitRequest.Gates must not hold an empty key"},
		{"gate twice", ratelimit.AdmitRequest{Gates: []string{"g", "g"}}, `hold key "g" twice`},
		{"lease twice", ratelimit.AdmitRequest{Leases: []ratelimit.LeaseRequest{{Key: "l", InFlight: in}, {Key: "l", InFlight: in}}}, `hold key "l" twice`},
		{"bad lease", ratelimit.AdmitRequest{Leases: []ratelimit.LeaseRequest{{Key: "l"}}}, "InFlight.Max"},
		{"empty group", ratelimit.AdmitRequest{Groups: []ratelimit.RequestGroup{{}}}, "must hold at least one request"},
		{"counter in two groups", ratelimit.AdmitRequest{Groups: []ratelimit.RequestGroup{{Requests: []ratelimit.Request{r("a", 1)}}, {Requests: []ratelimit.Request{r("a", 1)}}}}, `key "a"`},
		{"fallback over capacity", ratelimit.AdmitRequest{Groups: []ratelimit.RequestGroup{{Requests: []ratelimit.Request{r("a", 1)}, Fallback: []ratelimit.Request{r("a", 6)}}}}, "exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ratelimit.ErrInvalidArgument)):
				t.Errorf("Validate: %v, want an ErrInvalidArgument containing %q", err, tc.want)
			}
		})
	}
}

func TestChooseGroup(t *testing.T) {
	t.Parallel()
	ok := ratelimit.Result{Allowed: true}
	wait := func(d time.Duration) ratelimit.Result { return ratelimit.Result{RetryAfter: d} }
	tests := []struct {
		name      string
		pref, fb  []ratelimit.Result
		first     bool
		retryWant time.Duration
	}{
		{"first admits", []ratelimit.Result{ok}, []ratelimit.Result{ok}, true, 0},
		{"fallback admits", []ratelimit.Result{ok, wait(5)}, []ratelimit.Result{ok}, false, 0},
		{"no fallback", []ratelimit.Result{wait(5)}, nil, true, 5},
		{"fallback sooner", []ratelimit.Result{wait(5)}, []ratelimit.Result{wait(2)}, false, 2},
		{"first sooner", []ratelimit.Result{wait(2)}, []ratelimit.Result{wait(5)}, true, 2},
	}
	for _, tc := range tests {
		first, retry := ratelimit.ChooseGroup(tc.pref, tc.fb)
		if first != tc.first || retry != tc.retryWant {
			t.Errorf("%s: ChooseGroup = %v, %v; want %v, %v", tc.name, first, retry, tc.first, tc.retryWant)
		}
	}
}
