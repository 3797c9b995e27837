package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/queue"
)

// ErrBadURL is matched (errors.Is) by CheckURL's errors for a URL that is
// not an absolute http or https URL.
var ErrBadURL = errors.New("webhook: not an absolute http or https URL")

// CheckURL refuses, before anything is stored, a receiver URL the guard
// would refuse to connect to: not http or https, or a host that is, or
// resolves to, a refused address (every address it resolves to must be
// allowed). resolve may be nil for the system resolver. It returns nil, an
// error matching ErrBadURL, a *RefusedError, or the resolver's error.
//
// It is a first check for a clear answer at enqueue time: the address is
// checked again on every connection (Guard.Control), since a name may
// resolve elsewhere by then (DNS rebinding).
func (g Guard) CheckURL(ctx context.Context, raw string, resolve Resolver) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%w: %q", ErrBadURL, raw)
	}
	if g.AllowAll {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return g.Check(a)
	}
	if resolve == nil {
		resolve = systemResolve
	}
	addrs, err := resolve(ctx, host)
	if err != nil {
		return fmt.Errorf("webhook: resolving %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("webhook: %s has no addresses", host)
	}
	for _, a := range addrs {
		if err := g.Check(a); err != nil {
			return err
		}
	}
	return nil
}

// systemResolve resolves host with the system resolver.
func systemResolve(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// WebhookCheck returns the check a queue.Client runs on every webhook
// given with a job, a flow's node, a schedule's job or a group
// (queue.ClientConfig.CheckWebhook): CheckURL with resolve, its refusal
// naming the webhook's URL field. Give the client the dispatcher's guard,
// so that what is stored is what will be delivered.
func (g Guard) WebhookCheck(resolve Resolver) queue.WebhookCheck {
	return func(ctx context.Context, w *queue.Webhook, _ string) error {
		if err := g.CheckURL(ctx, w.URL, resolve); err != nil {
			return queue.RefuseWebhook("URL", URLRefusal(err, g.AllowSetting))
		}
		return nil
	}
}

// URLRefusal says why CheckURL refused a URL, as the rule of a refused
// field ("is refused: its host is a loopback address (127.0.0.1); …");
// setting names where an operator allows an address (default
// "Guard.Allow").
func URLRefusal(err error, setting string) string {
	if setting == "" {
		setting = "Guard.Allow"
	}
	var re *RefusedError
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("is refused: its host is a %s address (%s); an operator may allow it with %s",
			re.Reason, re.Addr, setting)
	case errors.Is(err, ErrBadURL):
		return "must be an absolute http or https URL"
	}
	return "is refused: " + strings.TrimPrefix(err.Error(), "webhook: ")
}
