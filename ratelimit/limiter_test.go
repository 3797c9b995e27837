package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// The scenes below re-express FastGPT's rate-limit scenes; the tests pin
// the behaviours its own tests pin.

type ipCall struct {
	Policy string // the endpoint's id, such as "wechat-login-qrcode"
	IP     string
	Limit  int64
}

func ipScene(limitOf func(ipCall) int64) ratelimit.Definition[ipCall] {
	return ratelimit.Definition[ipCall]{
		Scene:   "ip",
		Policy:  func(c ipCall) string { return c.Policy },
		Subject: func(c ipCall) []string { return []string{"ip", c.IP} },
		Limits: func(c ipCall) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.PerMinute(limitOf(c))}
		},
	}
}

type verification struct {
	Action  string // code-consume, captcha-create, ...
	Account string
}

func verificationScene() ratelimit.Definition[verification] {
	return ratelimit.Definition[verification]{
		Scene:       "account-verification",
		Policy:      func(v verification) string { return v.Action },
		Subject:     func(v verification) []string { return []string{"account", v.Account} },
		Limits:      func(verification) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerMinute(10)} },
		FailureMode: ratelimit.FailClosed,
	}
}

type memberCall struct {
	Policy, Member string
	Cost           int64
}

func memberScene(limits map[string]ratelimit.Limit) ratelimit.Definition[memberCall] {
	return ratelimit.Definition[memberCall]{
		Scene:   "member",
		Policy:  func(c memberCall) string { return c.Policy },
		Subject: func(c memberCall) []string { return []string{"member", c.Member} },
		Limits:  func(c memberCall) []ratelimit.Limit { return []ratelimit.Limit{limits[c.Policy]} },
		Cost: func(c memberCall) int64 {
			if c.Cost == 0 {
				return 1
			}
			return c.Cost
		},
	}
}

func fixedLimit(n int64) func(ipCall) int64 { return func(ipCall) int64 { return n } }

func TestIPLimitOneAllowsThenDeniesPerIP(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	l := mustDefine(t, s, ipScene(fixedLimit(1)))
	steps := []struct {
		ip   string
		want bool
	}{{"192.0.2.1", true}, {"192.0.2.1", false}, {"192.0.2.2", true}}
	for i, st := range steps {
		if got := allow(t, l, ipCall{Policy: "wechat-login-qrcode", IP: st.ip}); got != st.want {
			t.Errorf("step %d (%s): Allow = %v, want %v", i, st.ip, got, st.want)
		}
	}
}

func TestCostTwoOnLimitThree(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	l := mustDefine(t, s, memberScene(map[string]ratelimit.Limit{"export": ratelimit.PerMinute(3)}))
	in := memberCall{Policy: "export", Member: "m1", Cost: 2}
	if !allow(t, l, in) {
		t.Error("first cost-2 call on limit 3: denied, want allowed")
	}
	if allow(t, l, in) {
		t.Error("second cost-2 call on limit 3: allowed, want denied")
	}
	if !allow(t, l, memberCall{Policy: "export", Member: "m1", Cost: 1}) {
		t.Error("cost 1 after the denial: denied, want allowed (the denial used nothing)")
	}
}

func TestStoreFailureAppliesFailureMode(t *testing.T) {
	t.Parallel()
	mem, _ := newMem(t)
	store := &faultyStore{Store: mem}
	store.down.Store(true)
	var rec recorder
	open := mustDefine(t, store, ipScene(fixedLimit(5)), ratelimit.WithObserver(rec.observe))
	closed := mustDefine(t, store, verificationScene(), ratelimit.WithObserver(rec.observe))
	ctx := context.Background()

	if ok, err := open.Allow(ctx, ipCall{Policy: "login", IP: "192.0.2.1"}); !ok || err != nil {
		t.Errorf("fail-open scene during an outage: Allow = %v, %v; want true, nil", ok, err)
	}
	if ev := rec.last(t); !ev.FailureModeApplied || !ev.Allowed || !errors.Is(ev.Err, ratelimit.ErrStoreUnavailable) || !errors.Is(ev.Err, errDown) {
		t.Errorf("fail-open event = %+v, want FailureModeApplied, Allowed and the store fault", ev)
	}
	in := verification{Action: "code-consume", Account: "user@example.com"}
	if ok, err := closed.Allow(ctx, in); ok || err != nil {
		t.Errorf("fail-closed scene during an outage: Allow = %v, %v; want false, nil", ok, err)
	}
	var lim *ratelimit.LimitedError
	if err := closed.Assert(ctx, in); !errors.As(err, &lim) {
		t.Errorf("fail-closed Assert during an outage = %v, want a *LimitedError", err)
	}
	if _, err := closed.Consume(ctx, in); !errors.Is(err, ratelimit.ErrStoreUnavailable) || !errors.Is(err, errDown) {
		t.Errorf("Consume during an outage: err = %v, want the store fault (Consume never masks)", err)
	}
	store.down.Store(false)
	if ok, _ := closed.Allow(ctx, in); !ok {
		t.Error("fail-closed scene after recovery: denied, want allowed")
	}
}

func TestInvalidLimitIsNeverMasked(t *testing.T) {
	t.Parallel()
	mem, _ := newMem(t)
	store := &faultyStore{Store: mem}
	l := mustDefine(t, store, ipScene(fixedLimit(0)))
	in := ipCall{Policy: "login", IP: "192.0.2.1"}
	for _, down := range []bool{false, true} {
		store.down.Store(down)
		ok, err := l.Allow(context.Background(), in)
		if ok || !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("limit 0 on a fail-open scene (store down=%v): Allow = %v, %v; want false and ErrInvalidArgument", down, ok, err)
		}
		if err := l.Assert(context.Background(), in); !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("limit 0 (store down=%v): Assert = %v, want ErrInvalidArgument", down, err)
		}
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("store called %d times for an invalid limit, want 0", n)
	}
}

// TestCostAboveQuotaIsAnErrorNeverADenial: a call costing more than the
// quota can never pass, so every method says so with ErrCostExceedsQuota
// (never masked by the failure mode) instead of a denial whose RetryAfter
// a client would honour forever; the store is not asked.
func TestCostAboveQuotaIsAnErrorNeverADenial(t *testing.T) {
	t.Parallel()
	mem, _ := newMem(t)
	store := &faultyStore{Store: mem}
	l := mustDefine(t, store, memberScene(map[string]ratelimit.Limit{"export": ratelimit.PerMinute(3)}))
	in := memberCall{Policy: "export", Member: "42", Cost: 4}
	ctx := context.Background()
	for _, down := range []bool{false, true} {
		store.down.Store(down)
		if ok, err := l.Allow(ctx, in); ok || !errors.Is(err, ratelimit.ErrCostExceedsQuota) {
			t.Errorf("store down=%v: Allow = %v, %v; want false and ErrCostExceedsQuota", down, ok, err)
		}
		if err := l.Assert(ctx, in); !errors.Is(err, ratelimit.ErrCostExceedsQuota) || errors.Is(err, ratelimit.ErrLimited) {
			t.Errorf("store down=%v: Assert = %v, want ErrCostExceedsQuota and not ErrLimited", down, err)
		}
		if v, err := l.Check(ctx, in); !errors.Is(err, ratelimit.ErrInvalidArgument) || v.Allowed || v.Fault != nil {
			t.Errorf("store down=%v: Check = %+v, %v; want an ErrInvalidArgument error", down, v, err)
		}
		if _, err := l.Consume(ctx, in); !errors.Is(err, ratelimit.ErrCostExceedsQuota) {
			t.Errorf("store down=%v: Consume err = %v, want ErrCostExceedsQuota", down, err)
		}
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("store called %d times for a cost above the quota, want 0", n)
	}
}

func TestSeparateCounters(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	verify := mustDefine(t, s, verificationScene())
	members := mustDefine(t, s, memberScene(map[string]ratelimit.Limit{
		"export-usage": ratelimit.PerMinute(1), "export-dataset": ratelimit.PerMinute(1),
	}))
	for range 10 {
		allow(t, verify, verification{Action: "code-consume", Account: "a@example.com"})
	}
	tests := []struct {
		name string
		got  bool
	}{
		{"same account and action, 11th call", !allow(t, verify, verification{Action: "code-consume", Account: "a@example.com"})},
		{"other account", allow(t, verify, verification{Action: "code-consume", Account: "b@example.com"})},
		{"other action", allow(t, verify, verification{Action: "captcha-create", Account: "a@example.com"})},
		{"member 1 export-usage", allow(t, members, memberCall{Policy: "export-usage", Member: "1"})},
		{"member 2 export-usage", allow(t, members, memberCall{Policy: "export-usage", Member: "2"})},
		{"member 1 export-dataset", allow(t, members, memberCall{Policy: "export-dataset", Member: "1"})},
		{"member 1 export-usage again", !allow(t, members, memberCall{Policy: "export-usage", Member: "1"})},
	}
	for _, tc := range tests {
		if !tc.got {
			t.Errorf("%s: wrong answer (counters must be per account, action, member and policy)", tc.name)
		}
	}
}

func TestConcurrentCallsAreExact(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	l := mustDefine(t, s, ipScene(fixedLimit(32)))
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if ok, err := l.Allow(context.Background(), ipCall{Policy: "login", IP: "192.0.2.1"}); err != nil {
				t.Error(err)
			} else if ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 32 {
		t.Errorf("64 concurrent calls on a limit of 32 allowed %d, want 32", got)
	}
}

func TestShadowModeAllowsButReports(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	var rec recorder
	def := ipScene(fixedLimit(1))
	def.Shadow = true
	l := mustDefine(t, s, def, ratelimit.WithObserver(rec.observe))
	in := ipCall{Policy: "login", IP: "192.0.2.1"}
	for i := range 3 {
		if !allow(t, l, in) {
			t.Fatalf("shadow call %d: denied, want always allowed", i+1)
		}
	}
	if err := l.Assert(context.Background(), in); err != nil {
		t.Errorf("shadow Assert = %v, want nil", err)
	}
	ev := rec.all()
	if len(ev) != 4 {
		t.Fatalf("observer saw %d events, want 4", len(ev))
	}
	for i, e := range ev {
		wantDenied := i > 0
		if e.Decision.Allowed == wantDenied || !e.Allowed || !e.Shadow {
			t.Errorf("event %d: decision allowed=%v, answer %v, shadow %v; want decision denied=%v, answer true, shadow true",
				i, e.Decision.Allowed, e.Allowed, e.Shadow, wantDenied)
		}
	}
	if d, _ := l.Consume(context.Background(), in); d.Allowed {
		t.Error("shadow Consume: allowed, want the raw denial")
	}
}

func TestObserverEvents(t *testing.T) {
	t.Parallel()
	mem, _ := newMem(t)
	store := &faultyStore{Store: mem}
	var rec recorder
	l := mustDefine(t, store, memberScene(map[string]ratelimit.Limit{"redeem-coupon": ratelimit.PerSecond(1)}),
		ratelimit.WithObserver(rec.observe))
	ctx := context.Background()
	in := memberCall{Policy: "redeem-coupon", Member: "7"}
	l.Allow(ctx, in)
	l.Assert(ctx, in)
	l.Consume(ctx, in)
	store.down.Store(true)
	l.Allow(ctx, in)
	l.Allow(ctx, memberCall{Policy: "unknown", Member: "7"}) // no limit: invalid
	tests := []struct {
		allowed, decision, fault, failureMode bool
		invalid                               bool
	}{
		{allowed: true, decision: true},
		{},
		{},
		{allowed: true, fault: true, failureMode: true},
		{invalid: true},
	}
	ev := rec.all()
	if len(ev) != len(tests) {
		t.Fatalf("observer saw %d events, want %d", len(ev), len(tests))
	}
	for i, want := range tests {
		e := ev[i]
		if e.Scene != "member" || e.Allowed != want.allowed || e.Decision.Allowed != want.decision ||
			errors.Is(e.Err, ratelimit.ErrStoreUnavailable) != want.fault || e.FailureModeApplied != want.failureMode ||
			errors.Is(e.Err, ratelimit.ErrInvalidArgument) != want.invalid || e.Latency < 0 {
			t.Errorf("event %d = %+v, want %+v", i, e, want)
		}
	}
	if ev[0].Policy != "redeem-coupon" || len(ev[0].Decision.Results) != 1 {
		t.Errorf("event 0: policy %q with %d results, want redeem-coupon with 1", ev[0].Policy, len(ev[0].Decision.Results))
	}
}

func TestHungStoreTimesOutIntoTheFailureMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
		var rec recorder
		def := ipScene(fixedLimit(5))
		def.FailureMode = mode
		l := mustDefine(t, hungStore{}, def, ratelimit.WithTimeout(time.Millisecond), ratelimit.WithObserver(rec.observe))
		ok, err := l.Allow(context.Background(), ipCall{Policy: "login", IP: "192.0.2.1"})
		if err != nil || ok != (mode == ratelimit.FailOpen) {
			t.Errorf("fail-%s on a hung store: Allow = %v, %v; want %v, nil", mode, ok, err, mode == ratelimit.FailOpen)
		}
		ev := rec.last(t)
		if !ev.FailureModeApplied || !errors.Is(ev.Err, context.DeadlineExceeded) || !errors.Is(ev.Err, ratelimit.ErrStoreUnavailable) {
			t.Errorf("fail-%s event = %+v, want the failure mode applied to a deadline fault", mode, ev)
		}
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	verify := mustDefine(t, s, verificationScene())
	ip := mustDefine(t, s, ipScene(fixedLimit(1)))
	tests := []struct {
		name string
		key  func() (string, error)
		want string
	}{
		{"account", func() (string, error) {
			return verify.Key(verification{Action: "code-consume", Account: "user@example.com"})
		}, "rate-limit:account-verification:code-consume:{account:user%40example.com}"},
		{"ipv4", func() (string, error) {
			return ip.Key(ipCall{Policy: "wechat-login-qrcode", IP: "192.0.2.1"})
		}, "rate-limit:ip:wechat-login-qrcode:{ip:192.0.2.1}"},
		{"ipv6 colons escaped", func() (string, error) {
			return ip.Key(ipCall{Policy: "login", IP: "2001:db8::1"})
		}, "rate-limit:ip:login:{ip:2001%3Adb8%3A%3A1}"},
		{"policy escaped", func() (string, error) {
			return ip.Key(ipCall{Policy: "a:b{c}*", IP: "x"})
		}, "rate-limit:ip:a%3Ab%7Bc%7D%2A:{ip:x}"},
	}
	for _, tc := range tests {
		if got, err := tc.key(); err != nil || got != tc.want {
			t.Errorf("%s: Key = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestKeyRejectsBadSubjects(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	tests := []struct {
		name    string
		policy  string
		subject []string
	}{
		{"empty policy", "", []string{"member", "1"}},
		{"no subject", "p", nil},
		{"subject without a type", "p", []string{"1"}},
		{"empty id", "p", []string{"member", ""}},
	}
	for _, tc := range tests {
		l := mustDefine(t, s, ratelimit.Definition[int]{
			Scene:   "member",
			Policy:  func(int) string { return tc.policy },
			Subject: func(int) []string { return tc.subject },
			Limits:  func(int) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerSecond(1)} },
		})
		if _, err := l.Key(0); !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("%s: Key error = %v, want ErrInvalidArgument", tc.name, err)
		}
		if ok, err := l.Allow(context.Background(), 0); ok || !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("%s: Allow = %v, %v; want false and ErrInvalidArgument", tc.name, ok, err)
		}
	}
}

func TestAssert(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	l := mustDefine(t, s, memberScene(map[string]ratelimit.Limit{"refund-bill": ratelimit.PerSecond(1).WithBurst(1)}))
	in := memberCall{Policy: "refund-bill", Member: "9"}
	if err := l.Assert(context.Background(), in); err != nil {
		t.Fatalf("first Assert = %v, want nil", err)
	}
	err := l.Assert(context.Background(), in)
	var lim *ratelimit.LimitedError
	if !errors.Is(err, ratelimit.ErrLimited) || !errors.As(err, &lim) {
		t.Fatalf("second Assert = %v, want a *LimitedError matching ErrLimited", err)
	}
	if lim.Scene != "member" || lim.Policy != "refund-bill" || lim.RetryAfter() != time.Second {
		t.Errorf("LimitedError = %+v (RetryAfter %v), want member/refund-bill with RetryAfter 1s", lim, lim.RetryAfter())
	}
	want := "ratelimit: member/refund-bill limited: 1 every 1s, retry after 1s"
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}

	def := memberScene(map[string]ratelimit.Limit{"refund-bill": ratelimit.PerSecond(1)})
	def.Error = func(c memberCall, d ratelimit.Decision) error {
		return fmt.Errorf("member %s: too many refunds, retry in %v", c.Member, d.RetryAfter)
	}
	custom := mustDefine(t, s, def)
	custom.Assert(context.Background(), memberCall{Policy: "refund-bill", Member: "10"})
	err = custom.Assert(context.Background(), memberCall{Policy: "refund-bill", Member: "10"})
	if err == nil || err.Error() != "member 10: too many refunds, retry in 1s" {
		t.Errorf("custom Assert = %v, want the definition's error", err)
	}
}

func TestDefineValidates(t *testing.T) {
	t.Parallel()
	s, _ := newMem(t)
	ok := ipScene(fixedLimit(1))
	tests := []struct {
		name  string
		store ratelimit.Store
		edit  func(*ratelimit.Definition[ipCall])
		field string
	}{
		{"nil store", nil, func(*ratelimit.Definition[ipCall]) {}, "store"},
		{"empty scene", s, func(d *ratelimit.Definition[ipCall]) { d.Scene = "" }, "Definition.Scene"},
		{"nil subject", s, func(d *ratelimit.Definition[ipCall]) { d.Subject = nil }, "Definition.Subject"},
		{"nil limits", s, func(d *ratelimit.Definition[ipCall]) { d.Limits = nil }, "Definition.Limits"},
		{"unknown failure mode", s, func(d *ratelimit.Definition[ipCall]) { d.FailureMode = 7 }, "Definition.FailureMode"},
	}
	for _, tc := range tests {
		def := ok
		tc.edit(&def)
		_, err := ratelimit.Define(tc.store, def)
		var inv *ratelimit.InvalidArgumentError
		if !errors.As(err, &inv) || inv.Field != tc.field {
			t.Errorf("%s: Define error = %v, want an InvalidArgumentError on %s", tc.name, err, tc.field)
		}
	}
	if _, err := ratelimit.Define(s, ok); err != nil {
		t.Errorf("valid definition: %v", err)
	}
}
