// Command scenes shows scenario rate limits at work on the in-process
// store: FastGPT's member policy table, account verification (failing
// closed) and per-IP endpoint limits, then what each scene answers when its
// store is unreachable.
//
//	go run ./examples/scenes
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func main() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	if err := demo(context.Background(), os.Stdout, store); err != nil {
		fmt.Fprintln(os.Stderr, "scenes:", err)
		os.Exit(1)
	}
}

// scenes are the limiters a service would keep, one per scene.
type scenes struct {
	member *ratelimit.Limiter[MemberAction]
	verify *ratelimit.Limiter[Verification]
	ip     *ratelimit.Limiter[IPCall]
}

func newScenes(store ratelimit.Store, opts ...ratelimit.Option) (*scenes, error) {
	member, err := ratelimit.Define(store, memberScene(), opts...)
	if err != nil {
		return nil, err
	}
	verify, err := ratelimit.Define(store, verificationScene(), opts...)
	if err != nil {
		return nil, err
	}
	ip, err := ratelimit.Define(store, ipScene(), opts...)
	if err != nil {
		return nil, err
	}
	return &scenes{member: member, verify: verify, ip: ip}, nil
}

// unreachable is a store that cannot be reached, standing in for a Redis
// that is down, to show what each failure mode answers.
type unreachable struct{}

func (unreachable) Consume(context.Context, ...ratelimit.Request) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: errors.New("connection refused")}
}

// demo prints a few decisions of each scene on store.
func demo(ctx context.Context, w io.Writer, store ratelimit.Store) error {
	// Store faults are expected in the outage part: keep their logs out of
	// the demo's output.
	quiet := ratelimit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s, err := newScenes(store, quiet)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "== member scene: one limit per policy, counted per member")
	for _, a := range []MemberAction{
		{RedeemCoupon, "alice"}, {RedeemCoupon, "alice"}, {RedeemCoupon, "bob"}, {ExportUsage, "alice"},
	} {
		d, err := s.member.Consume(ctx, a)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %s (%s): %s\n", a.Member, a.Policy, memberLimits[a.Policy], describe(d))
	}
	if _, err := s.member.Allow(ctx, MemberAction{"no-such-policy", "alice"}); err != nil {
		fmt.Fprintln(w, "unknown policy:", err)
	}

	fmt.Fprintln(w, "== account verification: 10 per minute per action and account, fails closed")
	in := Verification{CodeConsume, "user@example.com"}
	key, _ := s.verify.Key(in)
	fmt.Fprintln(w, "key:", key)
	allowed, last := 0, error(nil)
	for range 11 {
		if last = s.verify.Assert(ctx, in); last == nil {
			allowed++
		}
	}
	fmt.Fprintf(w, "%s: %d of 11 allowed, the last: %v\n", in.Action, allowed, last)
	if err := s.verify.Assert(ctx, Verification{CaptchaCreate, "user@example.com"}); err == nil {
		fmt.Fprintf(w, "%s: allowed (its own counter)\n", CaptchaCreate)
	}

	fmt.Fprintln(w, "== ip scene: wechat-login-qrcode, 1 every 60 seconds per IP")
	for _, ip := range []string{"192.0.2.1", "192.0.2.1", "2001:db8::7"} {
		ok, err := s.ip.Allow(ctx, IPCall{Endpoint: "wechat-login-qrcode", IP: ip, Limit: 1, Seconds: 60})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: allowed=%v\n", ip, ok)
	}
	return outage(ctx, w, quiet)
}

// outage shows the failure modes: the same scenes on a store that is down.
func outage(ctx context.Context, w io.Writer, opts ...ratelimit.Option) error {
	s, err := newScenes(unreachable{}, opts...)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "== store unreachable")
	ipOK, err := s.ip.Allow(ctx, IPCall{Endpoint: "wechat-login-qrcode", IP: "192.0.2.9", Limit: 1, Seconds: 60})
	if err != nil {
		return err
	}
	verifyOK, err := s.verify.Allow(ctx, Verification{CodeConsume, "user@example.com"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ip scene (fails open): allowed=%v\n", ipOK)
	fmt.Fprintf(w, "account verification (fails closed): allowed=%v\n", verifyOK)
	return nil
}

func describe(d ratelimit.Decision) string {
	r, _ := d.Tightest()
	if d.Allowed {
		return fmt.Sprintf("allowed, %d left", r.Remaining)
	}
	return fmt.Sprintf("denied, retry after %v", d.RetryAfter)
}
