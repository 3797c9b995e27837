package server

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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
	g.AllowSetting = "webhooks.allow_networks" // a refusal names the key that allows it (URLRefusal)
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

// checkHook is the job client's WebhookCheck (queue.ClientConfig.
// CheckWebhook): it refuses, before anything is stored, a webhook given
// with a job, a flow's node, a schedule's job or a group (q "") that
// cannot be delivered: the feature is off, the store records no events,
// or its URL is refused by the SSRF guard, with webhooks.allow_networks as
// it is now. The client names the field where the webhook came in
// (webhook.url, jobs[1].webhook.url, nodes[2].job.webhook.url,
// job.webhook.url).
func (s *Server) checkHook(ctx context.Context, h *queue.Webhook, q string) error {
	cfg := s.Config()
	switch {
	case !jobHooksOn(cfg):
		return queue.RefuseWebhook("", "is refused: webhooks given with jobs are off on this server (webhooks.jobs.off, or a Redis Cluster store)")
	case s.backend.Features().Outbox == nil:
		return queue.RefuseWebhook("", "is refused: this job store records no events to deliver")
	case q != "" && placedOn(s.backend, q).Features().Outbox == nil:
		return queue.RefuseWebhook("", fmt.Sprintf("is refused: queue %q is on a backend that records no events (such as the RabbitMQ lane)", q))
	}
	return hookGuard(cfg).WebhookCheck(webhookResolve)(ctx, h, q)
}

// placedOn returns the backend that holds queue q's jobs, following
// routers (queue/mux): only its events reach an outbox.
func placedOn(b backend.Backend, q string) backend.Backend {
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

// prepareEnqueue stamps the caller's trace context on specs and returns
// the context to enqueue with. Their webhooks are checked by the job
// client (checkHook), as every job's are.
func (s *Server) prepareEnqueue(r *http.Request, specs []queue.JobSpec) context.Context {
	s.stampTraces(r, specs)
	return s.traced(r)
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
