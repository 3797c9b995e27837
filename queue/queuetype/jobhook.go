package queuetype

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Bounds of a Webhook.
const (
	// MaxWebhookSize bounds a Webhook's JSON encoding (URL, events,
	// metadata and headers together): 16 KiB. It is stored with every job
	// that carries it.
	MaxWebhookSize = 16 << 10
	// MaxWebhookHeaders bounds Webhook.Headers.
	MaxWebhookHeaders = 20
)

// Webhook is a receiver given with one job (JobSpec.Webhook) or one group
// (GroupSpec.Webhook), as Firecrawl takes a webhook with each crawl: the
// job's events are POSTed to URL with the job's result and Metadata,
// signed like the configured subscriptions' (with the tenant's secret
// when it has one). It is stored with the job and delivered through the
// backend's outbox, so it needs a backend with one (backend.Features.Outbox) and
// a dispatcher that reads per-job webhooks (queue/webhook's
// Config.Jobs); the server runs one.
//
// A group's webhook receives the events of every job of the group and the
// group's own group.completed; a job's own webhook receives its events.
type Webhook struct {
	// URL receives the events by POST: an absolute http or https URL.
	// Addresses the dispatcher's guard refuses (private, loopback,
	// link-local…) are refused when the job is stored by a client with a
	// CheckWebhook (the server's is one), and at every connection.
	// Required.
	URL string `json:"url"`
	// Events lists the event types wanted. Empty means the final ones of
	// a job (job.completed, job.failed, job.cancelled) and, for a group's
	// webhook, group.completed.
	Events []EventType `json:"events,omitempty"`
	// Metadata is any JSON value, sent back as is in every payload (a
	// caller's own ids, say).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Headers are added to every request (an Authorization for the
	// receiver, say). Sluice's own headers, Content-Type, Host and other
	// hop-by-hop headers may not be set.
	Headers map[string]string `json:"headers,omitempty"`
}

// defaultHookEvents are the events a Webhook without Events receives.
var defaultHookEvents = []EventType{EventJobCompleted, EventJobFailed, EventJobCancelled, EventGroupCompleted}

// Wants reports whether w's filter matches t.
func (w *Webhook) Wants(t EventType) bool {
	if len(w.Events) == 0 {
		return slices.Contains(defaultHookEvents, t)
	}
	return slices.Contains(w.Events, t)
}

// reservedHookHeaders may not be set by Webhook.Headers: the transport
// and the signature own them.
var reservedHookHeaders = []string{
	"Content-Type", "Content-Length", "Host", "Connection", "Transfer-Encoding", "Te", "Trailer",
	"Upgrade", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "User-Agent", "Idempotency-Key",
}

// Validate returns an *InvalidArgumentError naming the first field of w
// that breaks a rule; typ is the argument's type ("JobSpec" or
// "GroupSpec"), so the field reads JobSpec.Webhook.URL. It checks the
// form only: whether the address is allowed is the client's
// ClientConfig.CheckWebhook's to say (see queue/webhook.Guard.WebhookCheck).
func (w *Webhook) Validate(typ string) error {
	f := func(name string) FieldPath { return Field(typ, "Webhook."+name) }
	u, err := url.Parse(w.URL)
	switch {
	case w.URL == "":
		return InvalidArgument(f("URL"), "must not be empty")
	case err != nil || !u.IsAbs() || u.Host == "":
		return InvalidArgument(f("URL"), "must be an absolute http or https URL, got %q", clipString(w.URL))
	case u.Scheme != "http" && u.Scheme != "https":
		return InvalidArgument(f("URL"), "must use http or https, got scheme %q", u.Scheme)
	case u.User != nil:
		return InvalidArgument(f("URL"), "must not carry a user or password (send credentials in headers)")
	}
	for _, e := range w.Events {
		if !slices.Contains(EventTypes, e) {
			return InvalidArgument(f("Events"), "has unknown event type %q (known: %v)", clipString(string(e)), EventTypes)
		}
	}
	if len(w.Metadata) > 0 && !json.Valid(w.Metadata) {
		return InvalidArgument(f("Metadata"), "must be valid JSON")
	}
	if err := w.validHeaders(f("Headers")); err != nil {
		return err
	}
	if n := w.size(); n > MaxWebhookSize {
		return InvalidArgument(Field(typ, "Webhook"), "must be at most %d bytes as JSON, got %d", MaxWebhookSize, n)
	}
	return nil
}

func (w *Webhook) validHeaders(p FieldPath) error {
	if len(w.Headers) > MaxWebhookHeaders {
		return InvalidArgument(p, "must hold at most %d headers, got %d", MaxWebhookHeaders, len(w.Headers))
	}
	for k, v := range w.Headers {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			return InvalidArgument(p, "has an invalid header name %q", clipString(k))
		case slices.Contains(reservedHookHeaders, ck) || strings.HasPrefix(ck, "Sluice-"):
			return InvalidArgument(p, "must not set %s: Sluice sets it", ck)
		case strings.ContainsAny(v, "\r\n\x00"):
			return InvalidArgument(p, "header %s must not contain line breaks or NUL", ck)
		}
	}
	return nil
}

// validHeaderName reports whether k is an HTTP token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// size is the length of w's JSON encoding.
func (w *Webhook) size() int {
	b, err := json.Marshal(w)
	if err != nil {
		return MaxWebhookSize + 1
	}
	return len(b)
}

// clipString shortens a refused value quoted in an error.
func clipString(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
