package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// webhookResolve resolves the host names of webhook URLs given with jobs,
// at enqueue and at every connection; nil is the system resolver. Tests
// replace it to make a name resolve where they choose.
var webhookResolve webhook.Resolver

// The API names of a webhook's fields.
func init() {
	for _, typ := range []string{"JobSpec", "GroupSpec"} {
		apiFields[[2]string{typ, "Webhook"}] = "webhook"
		for _, f := range []string{"URL", "Events", "Metadata", "Headers"} {
			apiFields[[2]string{typ, "Webhook." + f}] = "webhook." + strings.ToLower(f)
		}
	}
	apiFields[[2]string{"JobSpec", "Trace"}] = "traceparent"
}

// jobHooksOn reports whether webhooks given with jobs and groups are
// taken: unless webhooks.jobs.off, and not on a Redis Cluster, where the
// job store records no events.
func jobHooksOn(cfg *config.Config) bool {
	return !cfg.Webhooks.Jobs.Off && cfg.Storage.RedisMode != "cluster"
}

// outboxOn reports whether the job store must record events: for the
// subscriptions, or for the webhooks given with jobs.
func outboxOn(cfg *config.Config) bool { return webhooksOn(cfg) || jobHooksOn(cfg) }

// hookGuard is the guard of every delivery, with webhooks.allow_networks.
func hookGuard(cfg *config.Config) webhook.Guard {
	g := webhookGuard
	g.Allow = append(slices.Clip(g.Allow), cfg.Webhooks.AllowedPrefixes()...)
	g.AllowSetting = "webhooks.allow_networks" // a refusal names the key that allows it
	return g
}

// liveHookGuard is the dispatcher's guard: it reads webhooks.allow_networks
// from the config in force at each connection, so a reload of the file
// applies to deliveries as it does to the check at enqueue.
func (s *Server) liveHookGuard() webhook.Guard {
	g := webhookGuard
	g.AllowSetting = "webhooks.allow_networks"
	g.Allowed = func() []netip.Prefix { return s.Config().Webhooks.AllowedPrefixes() }
	return g
}

// jobHooks is the dispatcher's part that delivers the webhooks given with
// jobs and groups; nil when they are off.
func (s *Server) jobHooks(cfg *config.Config) *webhook.JobHooks {
	if !jobHooksOn(cfg) {
		return nil
	}
	j := cfg.Webhooks.Jobs
	h := &webhook.JobHooks{Backend: s.backend, Secret: j.Secret, MaxResult: j.ResultLimit()}
	if h.MaxResult == 0 {
		h.MaxResult = -1
	}
	if base := strings.TrimRight(j.PublicURL, "/"); base != "" {
		h.ResultURL = func(id string) string { return base + "/v1/jobs/" + id }
	}
	return h
}

// checkHooks refuses, before anything is stored, a webhook given with a
// job (or with a group, typ "GroupSpec") that cannot be delivered: the
// feature is off, the store records no events, or its URL is refused by
// the SSRF guard. The error names the field, as queue's own checks do.
func (s *Server) checkHooks(ctx context.Context, typ string, hooks []*queue.Webhook, queues []string) error {
	cfg := s.Config()
	for i, h := range hooks {
		if h == nil {
			continue
		}
		at := func(name, rule string) error {
			p := queue.Field(typ, name)
			if len(hooks) > 1 {
				p = p.At("specs", i)
			}
			return &queue.InvalidArgumentError{Field: p.String(), Rule: rule, Path: p}
		}
		switch {
		case !jobHooksOn(cfg):
			return at("Webhook", "is refused: webhooks given with jobs are off on this server (webhooks.jobs.off, or a Redis Cluster store)")
		case s.backend.Features().Outbox == nil:
			return at("Webhook", "is refused: this job store records no events to deliver")
		case queues != nil && placedOn(s.backend, queues[i]).Features().Outbox == nil:
			return at("Webhook", fmt.Sprintf("is refused: queue %q is on a backend that records no events (such as the RabbitMQ lane)", queues[i]))
		}
		if err := h.Validate(typ); err != nil {
			// The client checks this too; done here so the guard sees a
			// sound URL.
			var ia *queue.InvalidArgumentError
			if len(hooks) > 1 && errors.As(err, &ia) {
				return at(ia.Path.Name, ia.Rule)
			}
			return err
		}
		if err := hookGuard(cfg).CheckURL(ctx, h.URL, webhookResolve); err != nil {
			return at("Webhook.URL", refusal(err))
		}
	}
	return nil
}

// refusal says why a webhook URL was refused, in the API's words.
func refusal(err error) string {
	var re *webhook.RefusedError
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("is refused: its host is a %s address (%s); an operator may allow it with %s",
			re.Reason, re.Addr, "webhooks.allow_networks")
	case errors.Is(err, webhook.ErrBadURL):
		return "must be an absolute http or https URL"
	}
	return "is refused: " + strings.TrimPrefix(err.Error(), "webhook: ")
}

// specHooks lists the webhooks of specs and their queues, by index.
func specHooks(specs []queue.JobSpec) ([]*queue.Webhook, []string) {
	hooks, queues := make([]*queue.Webhook, len(specs)), make([]string, len(specs))
	some := false
	for i := range specs {
		hooks[i], queues[i] = specs[i].Webhook, specs[i].Queue
		some = some || hooks[i] != nil
	}
	if !some {
		return nil, nil
	}
	return hooks, queues
}

// placedOn returns the backend that holds queue q's jobs, following
// routers (queue/mux): only its events reach an outbox.
func placedOn(b queue.Backend, q string) queue.Backend {
	for {
		r := b.Features().Router
		if r == nil {
			return b
		}
		next := r.Route(q)
		if next == nil || next == b {
			return b
		}
		b = next
	}
}

// prepareEnqueue checks the webhooks of specs and stamps the caller's
// trace context; it returns the context to enqueue with, or the error to
// answer.
func (s *Server) prepareEnqueue(r *http.Request, specs []queue.JobSpec) (context.Context, error) {
	hooks, queues := specHooks(specs)
	if err := s.checkHooks(r.Context(), "JobSpec", hooks, queues); err != nil {
		return nil, err
	}
	s.stampTraces(r, specs)
	return s.traced(r), nil
}

// redactHook returns w with its header values hidden, for reading back a
// job: a header may carry the receiver's credentials.
func redactHook(w *queue.Webhook) *queue.Webhook {
	if w == nil || len(w.Headers) == 0 {
		return w
	}
	c := *w
	c.Headers = make(map[string]string, len(w.Headers))
	for k := range w.Headers {
		c.Headers[k] = "[redacted]"
	}
	return &c
}

// applyTenantSecrets writes webhooks.jobs.tenant_secrets to the store at
// start.
func (s *Server) applyTenantSecrets(ctx context.Context, cfg *config.Config) error {
	secrets := cfg.Webhooks.Jobs.TenantSecrets
	if len(secrets) == 0 || s.backend == nil {
		return nil
	}
	ts := s.backend.Features().TenantSecrets
	if ts == nil {
		s.log.Warn("server: webhooks.jobs.tenant_secrets is set but the job store keeps no secrets; it is ignored")
		return nil
	}
	for t, sec := range secrets {
		if err := ts.SetTenantSecret(ctx, t, sec); err != nil {
			return fmt.Errorf("server: webhooks.jobs.tenant_secrets[%s]: %w", t, err)
		}
	}
	return nil
}
