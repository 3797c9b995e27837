package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/server/config"
)

// authState is the token table of one config version. Secrets are kept
// only as SHA-256 digests, so comparing is constant-time whatever the
// lengths, and a memory dump does not hold them in clear.
type authState struct {
	open   bool // no tokens and serving anonymously is allowed
	tokens []tokenEntry
	// metrics is the digest of metrics.token; nil leaves /metrics public
	// (authorizeMetrics, metrics_http.go).
	metrics *[32]byte
}

type tokenEntry struct {
	name   string
	digest [32]byte
	roles  map[config.Role]bool
}

// ErrNoTokens is returned for a config that has no tokens, listens on a
// non-loopback address and does not set auth.allow_anonymous.
var ErrNoTokens = fmt.Errorf("server: no auth tokens configured and server.listen is not a loopback address: add auth.tokens or set auth.allow_anonymous: true")

func buildAuth(cfg *config.Config) (authState, error) {
	a := authState{metrics: metricsDigest(cfg)}
	for _, t := range cfg.Auth.Tokens {
		e := tokenEntry{name: t.Name, digest: sha256.Sum256([]byte(t.Token)), roles: map[config.Role]bool{}}
		for _, r := range t.Roles {
			e.roles[r] = true
		}
		a.tokens = append(a.tokens, e)
	}
	if len(a.tokens) == 0 {
		if !cfg.Auth.AllowAnonymous && !IsLoopback(cfg.Server.Listen) {
			return a, ErrNoTokens
		}
		a.open = true
	}
	return a, nil
}

// IsLoopback reports whether addr (host:port) only accepts local
// connections: a loopback IP or "localhost". An empty host (all
// interfaces) is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorize returns nil when r may use a route needing role, else the
// problem to answer: 401 without a valid token, 403 for a token lacking
// the role.
func (a authState) authorize(r *http.Request, role config.Role) *problem {
	if a.open || role == "" {
		return nil
	}
	secret, ok := bearer(r)
	if !ok {
		return &problem{Status: http.StatusUnauthorized, Detail: "missing bearer token: send Authorization: Bearer <token>"}
	}
	tok := a.match(secret)
	if tok == nil {
		return &problem{Status: http.StatusUnauthorized, Detail: "invalid bearer token"}
	}
	if !tok.roles[role] && !tok.roles[config.RoleAdmin] {
		return &problem{Status: http.StatusForbidden, Detail: fmt.Sprintf("token %q lacks the %s role", tok.name, role)}
	}
	return nil
}

// match compares the digest of secret with every token, without stopping
// early, so the time taken does not say which token (if any) matched.
func (a authState) match(secret string) *tokenEntry {
	d := sha256.Sum256([]byte(secret))
	var found *tokenEntry
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(d[:], a.tokens[i].digest[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	return found
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
