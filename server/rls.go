package server

import (
	"context"
	"errors"
	"math"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/config"
)

// envoyRule is a config.EnvoyRule resolved against its scene.
type envoyRule struct {
	domain    string
	scene     string
	policy    string // fixed policy, or "" when policyKey names it
	policyKey string
	entries   []config.EnvoyEntry
	name      string   // for replaces
	replaces  []string // rules skipped when this one matches (rls_replaces.go)
}

func buildEnvoy(cfg *config.Config) []envoyRule {
	out := make([]envoyRule, 0, len(cfg.Limits.Envoy))
	for _, r := range cfg.Limits.Envoy {
		out = append(out, envoyRule{domain: r.Domain, scene: r.Scene, policy: r.Policy, policyKey: r.PolicyKey, entries: r.Entries, name: r.Name, replaces: r.Replaces})
	}
	return out
}

// match returns the policy and subject pairs for a descriptor, or false
// when the rule does not apply. The subject is built in the scene's field
// order.
func (r *envoyRule) match(domain string, d *corev3.RateLimitDescriptor, sc *scene) (string, []string, bool) {
	if r.domain != domain || len(d.Entries) != len(r.entries) {
		return "", nil, false
	}
	policy, fields := r.policy, map[string]string{}
	for i, e := range d.Entries {
		want := r.entries[i]
		if e.Key != want.Key || (want.Value != "" && e.Value != want.Value) {
			return "", nil, false
		}
		switch {
		case want.Subject != "":
			fields[want.Subject] = e.Value
		case want.Key == r.policyKey:
			policy = e.Value
		}
	}
	pairs := make([]string, 0, 2*len(sc.subject))
	for _, f := range sc.subject {
		if fields[f] == "" {
			return "", nil, false // an empty value cannot name a subject
		}
		pairs = append(pairs, f, fields[f])
	}
	return policy, pairs, true
}

// rls implements envoy.service.ratelimit.v3.RateLimitService.
type rls struct {
	rlsv3.UnimplementedRateLimitServiceServer
	s *Server
}

// RegisterGRPC registers the Envoy rate-limit service on g.
func (s *Server) RegisterGRPC(g grpc.ServiceRegistrar) {
	rlsv3.RegisterRateLimitServiceServer(g, &rls{s: s})
}

// ShouldRateLimit decides every descriptor of the request. A descriptor
// that matches no rule (or whose policy is unknown) is OK and counts
// nothing, like a descriptor without a limit in envoyproxy/ratelimit. Each
// matched descriptor is one decision in its scene, with the scene's
// failure mode and shadow mode; the request is OVER_LIMIT when any
// descriptor is. Negative hits are not supported: such a descriptor counts
// nothing and is OK. The descriptor's limit override is ignored: limits
// come from the config.
func (g *rls) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "sluice: domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "sluice: at least one descriptor is required")
	}
	st := g.s.state.Load()
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	replaced := st.replaced(req)
	for _, d := range req.Descriptors {
		ds, err := g.decide(ctx, st, req, d, replaced)
		if err != nil {
			return nil, err
		}
		if ds.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		resp.Statuses = append(resp.Statuses, ds)
	}
	return resp, nil
}

func (g *rls) decide(ctx context.Context, st *state, req *rlsv3.RateLimitRequest, d *corev3.RateLimitDescriptor, replaced map[string]bool) (*rlsv3.RateLimitResponse_DescriptorStatus, error) {
	ok := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
	if len(d.GetEntries()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "sluice: a descriptor must have at least one entry")
	}
	if d.IsNegativeHits {
		return ok, nil
	}
	for i := range st.envoy {
		r := &st.envoy[i]
		sc := st.scenes[r.scene]
		policyName, pairs, matched := r.match(req.Domain, d, sc)
		if !matched {
			continue
		}
		if r.name != "" && replaced[r.name] {
			return ok, nil // another matched rule replaces this one
		}
		pol := sc.policies[policyName]
		if pol == nil {
			return ok, nil
		}
		v, err := pol.limiter.Check(ctx, limitInput{pairs: pairs, cost: cost(req, d)})
		var over *ratelimit.CostExceedsQuotaError
		switch {
		case errors.As(err, &over):
			// hits_addend above a quota can never pass. An error would let
			// Envoy apply its own failure mode, which allows by default, so
			// it is OVER_LIMIT, as in envoyproxy/ratelimit.
			return overQuota(over), nil
		case err != nil:
			return nil, status.Errorf(codes.InvalidArgument, "sluice: %v", err)
		}
		return descriptorStatus(v), nil
	}
	return ok, nil
}

// cost is the descriptor's hits_addend when set, else the request's, where
// 0 means 1 as in Envoy.
func cost(req *rlsv3.RateLimitRequest, d *corev3.RateLimitDescriptor) int64 {
	if h := d.GetHitsAddend(); h != nil {
		return int64(min(h.Value, math.MaxInt64))
	}
	if req.HitsAddend == 0 {
		return 1
	}
	return int64(req.HitsAddend)
}

func descriptorStatus(v ratelimit.Verdict) *rlsv3.RateLimitResponse_DescriptorStatus {
	ds := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
	if !v.Allowed {
		ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	res, ok := v.Decision.Tightest()
	if !ok {
		return ds // store fault answered by the failure mode
	}
	ds.CurrentLimit = rateLimit(res.Limit)
	ds.LimitRemaining = uint32(min(res.Remaining, math.MaxUint32))
	ds.DurationUntilReset = durationpb.New(res.ResetAfter)
	return ds
}

// overQuota is the status of a descriptor whose cost exceeds a limit's
// quota: OVER_LIMIT, naming that limit, with nothing counted.
func overQuota(over *ratelimit.CostExceedsQuotaError) *rlsv3.RateLimitResponse_DescriptorStatus {
	return &rlsv3.RateLimitResponse_DescriptorStatus{
		Code:         rlsv3.RateLimitResponse_OVER_LIMIT,
		CurrentLimit: rateLimit(over.Limit),
	}
}

func rateLimit(l ratelimit.Limit) *rlsv3.RateLimitResponse_RateLimit {
	return &rlsv3.RateLimitResponse_RateLimit{
		Name:            l.String(),
		RequestsPerUnit: uint32(min(l.Quota, math.MaxUint32)),
		Unit:            unit(l.Window),
	}
}

// unit maps a window to Envoy's units; a window that is not exactly one
// unit (such as 10s) is UNKNOWN, with the quota and the limit's name
// saying the rest.
func unit(w time.Duration) rlsv3.RateLimitResponse_RateLimit_Unit {
	switch w {
	case time.Second:
		return rlsv3.RateLimitResponse_RateLimit_SECOND
	case time.Minute:
		return rlsv3.RateLimitResponse_RateLimit_MINUTE
	case time.Hour:
		return rlsv3.RateLimitResponse_RateLimit_HOUR
	case 24 * time.Hour:
		return rlsv3.RateLimitResponse_RateLimit_DAY
	case 7 * 24 * time.Hour:
		return rlsv3.RateLimitResponse_RateLimit_WEEK
	}
	return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
}
