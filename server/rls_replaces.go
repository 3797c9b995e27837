package server

import (
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// replaced returns the names of the rules that the request's matching
// rules replace, as envoy ratelimit's replaces: a descriptor whose rule is
// replaced counts nothing and is OK.
func (st *state) replaced(req *rlsv3.RateLimitRequest) map[string]bool {
	var out map[string]bool
	for _, d := range req.GetDescriptors() {
		for i := range st.envoy {
			r := &st.envoy[i]
			if len(r.replaces) == 0 {
				continue
			}
			if _, _, ok := r.match(req.Domain, d, st.scenes[r.scene]); ok {
				if out == nil {
					out = map[string]bool{}
				}
				for _, n := range r.replaces {
					out[n] = true
				}
			}
		}
	}
	return out
}
