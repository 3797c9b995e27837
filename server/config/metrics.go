package config

// Metrics configures GET /metrics.
type Metrics struct {
	// Token, when set, is the bearer token GET /metrics needs (an admin
	// token is accepted too); at least 16 characters, written as
	// ${ENV_VAR}. Empty (the default) leaves /metrics public.
	Token string `yaml:"token"`
	// TenantSeries is how many tenants get series of their own in the
	// metrics with a tenant label; every other tenant is counted under
	// tenant="_other". Default 50 (DefaultTenantSeries), at most 1000
	// (MaxTenantSeries).
	TenantSeries int `yaml:"tenant_series"`
}

// Bounds of Metrics.TenantSeries.
const (
	DefaultTenantSeries = 50
	MaxTenantSeries     = 1000
)

func (m *Metrics) applyDefaults() {
	if m.TenantSeries == 0 {
		m.TenantSeries = DefaultTenantSeries
	}
}

func (v *validator) metrics(m *Metrics) {
	if m.Token != "" && len(m.Token) < 16 {
		v.add([]any{"metrics", "token"}, "must be at least 16 characters, got %d", len(m.Token))
	}
	if m.TenantSeries < 0 || m.TenantSeries > MaxTenantSeries {
		v.add([]any{"metrics", "tenant_series"}, "must be from 0 (default %d) to %d, got %d", DefaultTenantSeries, MaxTenantSeries, m.TenantSeries)
	}
}
