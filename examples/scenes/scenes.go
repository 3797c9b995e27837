package main

import (
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// VerificationAction is one step of account verification.
type VerificationAction string

// The account-verification scene's actions: ten attempts per minute each.
const (
	CodeConsume     VerificationAction = "code-consume"
	CaptchaCreate   VerificationAction = "captcha-create"
	CaptchaConsume  VerificationAction = "captcha-consume"
	PasswordCreate  VerificationAction = "password-create"
	PasswordConsume VerificationAction = "password-consume"
)

// Verification is one verification attempt for an account (an e-mail
// address or a phone number).
type Verification struct {
	Action  VerificationAction
	Account string
}

// verificationScene fails closed: when the limiter cannot count, guessing
// codes must not become free.
func verificationScene() ratelimit.Definition[Verification] {
	return ratelimit.Definition[Verification]{
		Scene:       "account-verification",
		Policy:      func(v Verification) string { return string(v.Action) },
		Subject:     func(v Verification) []string { return []string{"account", v.Account} },
		Limits:      func(Verification) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerMinute(10)} },
		FailureMode: ratelimit.FailClosed,
	}
}

// IPCall is one request to an endpoint limited per client IP, such as the
// login QR code. Limit and Seconds are the endpoint's own settings.
type IPCall struct {
	Endpoint string
	IP       string
	Limit    int64
	Seconds  int64
}

// ipScene limits each endpoint per client IP; it fails open like every
// ordinary scene.
func ipScene() ratelimit.Definition[IPCall] {
	return ratelimit.Definition[IPCall]{
		Scene:   "ip",
		Policy:  func(c IPCall) string { return c.Endpoint },
		Subject: func(c IPCall) []string { return []string{"ip", c.IP} },
		Limits: func(c IPCall) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.Per(c.Limit, time.Duration(c.Seconds)*time.Second)}
		},
	}
}
