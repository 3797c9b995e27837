package server

import (
	"net/http"

	"github.com/sluicehq/sluice/queue/backend"
)

// tenantSecretBody is the body of PUT /v1/tenants/{tenant}/webhook-secret.
type tenantSecretBody struct {
	Secret string `json:"secret"`
}

// tenantSecretState is what GET answers: whether a secret is set, never
// the secret.
type tenantSecretState struct {
	Tenant string `json:"tenant"`
	Set    bool   `json:"set"`
}

// secrets returns the store's tenant secrets, or answers 501.
func (s *Server) secrets(w http.ResponseWriter) backend.TenantSecrets {
	ts := s.backend.Features().TenantSecrets
	if ts == nil {
		writeProblem(w, &problem{Status: http.StatusNotImplemented, Detail: "this job store keeps no tenant webhook secrets"}, nil)
	}
	return ts
}

func (s *Server) handleGetTenantSecret(w http.ResponseWriter, r *http.Request) {
	ts := s.secrets(w)
	if ts == nil {
		return
	}
	tenant := r.PathValue("tenant")
	sec, err := ts.TenantSecret(r.Context(), tenant)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tenantSecretState{Tenant: tenant, Set: sec != ""})
}

func (s *Server) handleSetTenantSecret(w http.ResponseWriter, r *http.Request) {
	var body tenantSecretBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	if body.Secret == "" {
		writeProblem(w, badRequest("secret is required (DELETE removes a tenant's secret)"), nil)
		return
	}
	s.putTenantSecret(w, r, body.Secret)
}

func (s *Server) handleDeleteTenantSecret(w http.ResponseWriter, r *http.Request) {
	s.putTenantSecret(w, r, "")
}

func (s *Server) putTenantSecret(w http.ResponseWriter, r *http.Request, secret string) {
	ts := s.secrets(w)
	if ts == nil {
		return
	}
	tenant := r.PathValue("tenant")
	if err := ts.SetTenantSecret(r.Context(), tenant, secret); err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tenantSecretState{Tenant: tenant, Set: secret != ""})
}
