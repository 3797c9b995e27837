package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// declaredPolicies returns every MemberPolicy constant declared in
// member.go, read from the source so that a constant added without a
// limit cannot slip past the table test.
func declaredPolicies(t *testing.T) map[string]MemberPolicy {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "member.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]MemberPolicy{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "MemberPolicy" {
				continue
			}
			for i, name := range vs.Names {
				v, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out[name.Name] = MemberPolicy(v)
			}
		}
	}
	return out
}

func TestEveryMemberPolicyHasExactlyOneLimit(t *testing.T) {
	t.Parallel()
	declared := declaredPolicies(t)
	if len(declared) != len(memberLimits) {
		t.Errorf("%d MemberPolicy constants, %d table entries: want one entry per constant", len(declared), len(memberLimits))
	}
	def := memberScene()
	seen := map[MemberPolicy]string{}
	for name, p := range declared {
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share the policy name %q", name, other, p)
		}
		seen[p] = name
		limits := def.Limits(MemberAction{Policy: p, Member: "m"})
		if len(limits) != 1 {
			t.Errorf("%s (%q): %d limits, want exactly 1", name, p, len(limits))
			continue
		}
		if err := limits[0].Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMemberTableMatchesTheReference(t *testing.T) {
	t.Parallel()
	want := map[MemberPolicy]struct {
		quota  int64
		window time.Duration
	}{
		"get-llm-request-record":        {1, time.Second},
		"chat-agent-helper-completions": {10, 60 * time.Second},
		"transcriptions":                {1, time.Second},
		"redeem-coupon":                 {1, time.Second},
		"refund-bill":                   {1, time.Second},
		"create-bill":                   {1, time.Second},
		"export-members":                {1, 60 * time.Second},
		"check-pay-result":              {60, 60 * time.Second},
		"export-usage":                  {1, 60 * time.Second},
		"export-dataset":                {1, 60 * time.Second},
		"download-dataset-archive":      {1, 60 * time.Second},
		"export-chat-logs":              {1, 60 * time.Second},
	}
	if len(memberLimits) != len(want) {
		t.Errorf("table has %d policies, reference %d", len(memberLimits), len(want))
	}
	for p, w := range want {
		got, ok := memberLimits[p]
		if !ok {
			t.Errorf("%s: missing", p)
			continue
		}
		if got.Quota != w.quota || got.Window != w.window || got.Algorithm != ratelimit.FixedWindow {
			t.Errorf("%s: %s, want %d per %s (fixed-window)", p, got, w.quota, w.window)
		}
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	// A quarter of a second into a second: windows start at each subject's
	// first call, not at the boundary, so a retry waits a whole window.
	clk := clock.NewFake(time.Date(2025, 6, 1, 12, 0, 0, 250_000_000, time.UTC))
	store := memlimit.New(memlimit.Options{Clock: clk})
	defer store.Close()
	var out strings.Builder
	if err := demo(context.Background(), &out, store); err != nil {
		t.Fatal(err)
	}
	want := `== member scene: one limit per policy, counted per member
alice redeem-coupon (1 per 1s (fixed-window)): allowed, 0 left
alice redeem-coupon (1 per 1s (fixed-window)): denied, retry after 1s
bob redeem-coupon (1 per 1s (fixed-window)): allowed, 0 left
alice export-usage (1 per 1m0s (fixed-window)): allowed, 0 left
unknown policy: ratelimit: limits scene "member" policy "no-such-policy" has no limits
== account verification: 10 per minute per action and account, fails closed
key: rate-limit:account-verification:code-consume:{account:user%40example.com}
code-consume: 10 of 11 allowed, the last: ratelimit: account-verification/code-consume limited: 10 every 1m0s, retry after 1m0s
captcha-create: allowed (its own counter)
== ip scene: wechat-login-qrcode, 1 every 60 seconds per IP
192.0.2.1: allowed=true
192.0.2.1: allowed=false
2001:db8::7: allowed=true
== store unreachable
ip scene (fails open): allowed=true
account verification (fails closed): allowed=false
`
	if got := out.String(); got != want {
		t.Errorf("demo output:\n%s\nwant:\n%s", got, want)
	}
}

// TestDemoOnTheRealClock runs the demo as main does; only the shape of the
// output is fixed, since retry-after figures depend on the time of day.
func TestDemoOnTheRealClock(t *testing.T) {
	t.Parallel()
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	var out strings.Builder
	if err := demo(context.Background(), &out, store); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 17 {
		t.Errorf("demo printed %d lines, want 17:\n%s", n, out.String())
	}
}
