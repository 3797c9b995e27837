package config

import (
	"net/url"
	"strings"
)

// DefaultMaxResultBytes is JobWebhooks.MaxResultBytes's default.
const DefaultMaxResultBytes = 64 << 10

// JobWebhooks configures the webhooks given with jobs and groups
// (webhooks.jobs): the receiver a caller names in its own request, as
// Firecrawl takes a webhook with each crawl.
type JobWebhooks struct {
	// Off refuses webhooks given with jobs and groups (400 naming the
	// webhook field). Default false: they are taken and delivered, and
	// the job store records events in its outbox (except on a Redis
	// Cluster, where it keeps none and the webhooks are refused).
	Off bool `yaml:"off"`
	// Secret signs the deliveries of tenants that have no secret of their
	// own (TenantSecrets, or PUT /v1/tenants/{tenant}/webhook-secret),
	// with the Sluice-Signature scheme of the subscriptions. Empty sends
	// those deliveries unsigned: set it.
	Secret string `yaml:"secret"`
	// TenantSecrets sets tenants' own signing secrets at start, by tenant
	// name (written to the job store, like queues.tenants).
	TenantSecrets map[string]string `yaml:"tenant_secrets"`
	// MaxResultBytes is the largest job result put in a payload; a larger
	// one is left out, and result_url says where to fetch it. Default
	// 65536 (DefaultMaxResultBytes); -1 never puts a result in.
	MaxResultBytes int `yaml:"max_result_bytes"`
	// PublicURL is this server's base URL as receivers reach it (such as
	// https://sluice.example.com), for result_url links to
	// GET /v1/jobs/{id}. Empty: no link.
	PublicURL string `yaml:"public_url"`
}

// ResultLimit returns MaxResultBytes with its default applied: 0 means
// never inline.
func (j JobWebhooks) ResultLimit() int {
	switch {
	case j.MaxResultBytes < 0:
		return 0
	case j.MaxResultBytes == 0:
		return DefaultMaxResultBytes
	}
	return j.MaxResultBytes
}

func (v *validator) jobWebhooks(j *JobWebhooks) {
	base := []any{"webhooks", "jobs"}
	if j.MaxResultBytes < -1 {
		v.add(p(base, "max_result_bytes"), "must be -1 (never), 0 (default 65536) or positive, got %d", j.MaxResultBytes)
	}
	if j.PublicURL != "" {
		u, err := url.Parse(j.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p(base, "public_url"), "must be an absolute http or https URL, got %q", j.PublicURL)
		}
	}
	for t, s := range j.TenantSecrets {
		if t == "" || s == "" || strings.ContainsAny(s, " \t\r\n") {
			v.add(p(base, "tenant_secrets", t), "needs a tenant name and a secret without spaces")
		}
	}
	if strings.ContainsAny(j.Secret, " \t\r\n") {
		v.add(p(base, "secret"), "must not contain spaces or line breaks")
	}
}
