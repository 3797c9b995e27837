package server

import (
	"net/http"

	"github.com/sluicehq/sluice/server/config"
)

// whoamiBody says what the caller's token may do.
type whoamiBody struct {
	// Name is the token's name from auth.tokens; empty on an open server.
	Name string `json:"name,omitempty"`
	// Roles the token has; every role on an open server.
	Roles []config.Role `json:"roles"`
	// Open is true when the server takes no tokens.
	Open bool `json:"open"`
}

// handleWhoami is GET /v1/whoami: the dashboard asks it which actions to
// offer, so a token without the admin role is not shown buttons that
// would only answer 403. It needs a valid token, but no role.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	a := s.state.Load().auth
	if a.open {
		writeJSON(w, http.StatusOK, whoamiBody{Roles: config.Roles, Open: true})
		return
	}
	secret, ok := bearer(r)
	var tok *tokenEntry
	if ok {
		tok = a.match(secret)
	}
	if tok == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
		writeProblem(w, &problem{Status: http.StatusUnauthorized, Detail: "missing or invalid bearer token"}, nil)
		return
	}
	out := whoamiBody{Name: tok.name, Roles: []config.Role{}}
	for _, role := range config.Roles {
		if tok.roles[role] {
			out.Roles = append(out.Roles, role)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
