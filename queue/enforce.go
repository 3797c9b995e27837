package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue/backend"
)

// ErrNotEnforced is matched by every *NotEnforcedError.
var ErrNotEnforced = errors.New("queue: scheduling not enforced on the job's queue")

// NotEnforcedError refuses a job whose tenant or group needs scheduling
// that the backend holding its queue cannot give: a tenant with a
// concurrency limit (or a pause in force) on a queue whose backend lacks
// CapTenants, or a group on a queue whose backend does not keep the group.
// Accepting the job would run it as if the limit were not there, so
// nothing of the call was stored. It also matches ErrUnsupported.
type NotEnforcedError struct {
	// Queue is the job's queue.
	Queue string
	// Backend names the backend that holds the queue, such as "amqpqueue".
	Backend string
	// Feature is the capability the job needs there: CapTenants or
	// CapGroups.
	Feature Capability
	// Tenant or Group is the scope whose settings would be ignored.
	Tenant, Group string
	// Reason says why, such as "tenant t8 has a concurrency limit of 1".
	Reason string
	// Field is the JobSpec field that asked for it, with its index in a
	// batch, such as "specs[2].JobSpec.Tenant"; Path is Field in parts.
	Field string
	Path  FieldPath
}

func (e *NotEnforcedError) Error() string {
	return fmt.Sprintf("queue: queue %s is on %s, which cannot enforce %s: %s (%s is set)", e.Queue, e.Backend, e.Feature, e.Reason, e.Field)
}

// Unwrap returns the refusal as an *UnsupportedError, for callers that
// look for one.
func (e *NotEnforcedError) Unwrap() error {
	return &UnsupportedError{Backend: e.Backend, Feature: e.Feature, Field: e.Field, Path: e.Path}
}

// Is makes errors.Is match ErrNotEnforced and ErrUnsupported.
func (e *NotEnforcedError) Is(target error) bool {
	return target == ErrNotEnforced || target == ErrUnsupported
}

// holder returns the backend that keeps the settings not tied to one
// queue (tenant settings, groups) for b: a router's default (followed
// through nested routers), else b.
func holder(b backend.Backend) backend.Backend {
	for {
		r := b.Features().Router
		if r == nil {
			return b
		}
		bs := r.Backends()
		if len(bs) == 0 || bs[0] == b {
			return b
		}
		b = bs[0]
	}
}

// checkScheduling refuses specs whose tenant or group would not be
// scheduled where their queue is held (see NotEnforcedError):
//
//   - a Group on a queue whose backend is not the one keeping groups
//     (a router's default) or lacks CapGroups: the group's limits, crawl
//     delay and completion would not see the job;
//   - a Tenant on a queue whose backend lacks CapTenants, when tenant
//     settings exist (b serves CapTenants) and the tenant's effective
//     Limit is not Unlimited or a pause of it is in force.
//
// It reads each such tenant's settings once per call; specs of queues
// that can schedule them cost nothing.
func checkScheduling(ctx context.Context, b backend.Backend, specs []JobSpec) error {
	tc := tenantCheck{b: b, infos: map[string]*TenantInfo{}}
	for i, s := range specs {
		if s.Group == "" && s.Tenant == "" {
			continue
		}
		p := backend.Placed(b, s.Queue)
		f := p.Features()
		caps := f.Effective()
		if s.Group != "" {
			reason, err := tc.groupNeeds(ctx, s.Group, p, caps)
			if err != nil {
				return err
			}
			if reason != "" {
				e := &NotEnforcedError{Queue: s.Queue, Backend: f.Name, Feature: CapGroups, Group: s.Group, Reason: reason}
				return e.at(Field("JobSpec", "Group"), i, len(specs))
			}
		}
		if s.Tenant == "" || caps.Has(CapTenants) {
			continue
		}
		reason, err := tc.needs(ctx, s.Tenant)
		if err != nil {
			return err
		}
		if reason != "" {
			e := &NotEnforcedError{Queue: s.Queue, Backend: f.Name, Feature: CapTenants, Tenant: s.Tenant, Reason: reason}
			return e.at(Field("JobSpec", "Tenant"), i, len(specs))
		}
	}
	return nil
}

// at sets the field of spec i of n.
func (e *NotEnforcedError) at(p FieldPath, i, n int) error {
	if n > 1 {
		p = p.At("specs", i)
	}
	e.Path, e.Field = p, p.String()
	return e
}

// tenantCheck reads tenant settings once per tenant for checkScheduling.
type tenantCheck struct {
	b     backend.Backend
	infos map[string]*TenantInfo
}

// groupNeeds returns why a job of group cannot go to p, whose
// capabilities are caps, or "": p must keep groups, and when it is not
// the backend that keeps the groups made through b (a router's default),
// the group must not be one of those (its limits and completion live
// there and would not see the job; a group never made there is only a
// label, kept by p).
func (c *tenantCheck) groupNeeds(ctx context.Context, group string, p backend.Backend, caps Capabilities) (string, error) {
	if !caps.Has(CapGroups) {
		return "the backend has no job groups", nil
	}
	h := holder(c.b)
	gb := h.Features().Groups
	if p == h || gb == nil {
		return "", nil
	}
	_, err := gb.Group(ctx, group)
	switch {
	case errors.Is(err, ErrGroupNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return "group " + group + " is kept by " + h.Features().Name + ", whose limits and completion would not see the job", nil
}

// needs returns why the tenant needs scheduling, or "" when it does not
// (or when no backend keeps tenant settings, so none can be set).
func (c *tenantCheck) needs(ctx context.Context, tenant string) (string, error) {
	tb := c.b.Features().Tenants
	if tb == nil {
		return "", nil
	}
	info, ok := c.infos[tenant]
	if !ok {
		var err error
		if info, err = tb.Tenant(ctx, tenant); err != nil {
			return "", err
		}
		c.infos[tenant] = info
	}
	return TenantNeeds(info), nil
}

// TenantNeeds says why a tenant with info needs a scheduler to hold its
// jobs back: a concurrency limit or a pause in force. It returns "" when
// its jobs may run as they come (weights and backlogs alone do not hold
// a job back).
func TenantNeeds(info *TenantInfo) string {
	switch {
	case info.Effective.Limit != Unlimited && info.Effective.Limit > 0:
		return fmt.Sprintf("tenant %s has a concurrency limit of %d", info.Tenant, info.Effective.Limit)
	case !info.PausedUntil.IsZero():
		return fmt.Sprintf("tenant %s is paused until %s", info.Tenant, info.PausedUntil.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	return ""
}
