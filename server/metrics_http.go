package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server/config"
)

// handleMetrics is GET /metrics: the token check of metrics.token, then
// the tenants with series chosen again when due, then the scrape.
func (s *Server) handleMetrics(scrape http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.serveMetrics(scrape, w, r)
	}
}

func (s *Server) serveMetrics(scrape http.Handler, w http.ResponseWriter, r *http.Request) {
	if p := s.state.Load().auth.authorizeMetrics(r); p != nil {
		if p.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
		}
		writeProblem(w, p, nil)
		return
	}
	if s.jobs != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		err := s.metrics.tenants.refresh(ctx, s.now(), clientBusiest(s.jobs))
		cancel()
		if err != nil {
			s.log.Warn("server: metrics: cannot read the busiest tenants; the tenants with series stay", "error", err)
		}
	}
	scrape.ServeHTTP(w, r)
}

// metricsDigest is the SHA-256 digest of metrics.token; nil when /metrics
// is public.
func metricsDigest(cfg *config.Config) *[32]byte {
	if cfg.Metrics.Token == "" {
		return nil
	}
	d := sha256.Sum256([]byte(cfg.Metrics.Token))
	return &d
}

// authorizeMetrics returns nil when r may read /metrics: always when
// metrics.token is unset, else with that token or an admin token. A
// missing or unknown token gets 401, another known token 403. Every
// digest is compared, so the time taken does not say which matched.
func (a authState) authorizeMetrics(r *http.Request) *problem {
	if a.metrics == nil {
		return nil
	}
	secret, ok := bearer(r)
	if !ok {
		return &problem{Status: http.StatusUnauthorized, Detail: "missing bearer token: /metrics needs metrics.token (Authorization: Bearer <token>)"}
	}
	d := sha256.Sum256([]byte(secret))
	isMetrics := subtle.ConstantTimeCompare(d[:], a.metrics[:]) == 1
	tok := a.match(secret)
	switch {
	case isMetrics || (tok != nil && tok.roles[config.RoleAdmin]):
		return nil
	case tok != nil:
		return &problem{Status: http.StatusForbidden, Detail: fmt.Sprintf("token %q may not read /metrics: use metrics.token or an admin token", tok.name)}
	}
	return &problem{Status: http.StatusUnauthorized, Detail: "invalid bearer token for /metrics"}
}
