package redisqueue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// needSched returns an *queue.UnsupportedError for feature when the
// scheduler is off (a Redis Cluster client).
func (b *Backend) needSched(feature queue.Capability) error {
	if b.schedPrefix == "" {
		return backend.Unsupported("redisqueue", feature)
	}
	return nil
}

// SetTenant implements backend.TenantBackend. Waiting jobs the new settings
// make room for are released in the same script, in whatever queue they
// are.
func (b *Backend) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	if err := b.needSched(queue.CapTenants); err != nil {
		return err
	}
	key := b.keys.defaults()
	if tenant != "" {
		key = b.keys.tenant(tenant)
	}
	_, args := b.group(nil, 5)
	args = append(args, tenant, cfg.Limit, cfg.Weight, cfg.Backlog, us(cfg.MaxWait))
	_, err := b.eval(ctx, "set tenant", scriptSetTenant, []string{key}, args...)
	return err
}

// Tenant implements backend.TenantBackend. Settings and counts are read in
// one script, so they agree.
func (b *Backend) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	if err := b.needSched(queue.CapTenants); err != nil {
		return nil, err
	}
	_, args := b.group(nil, 0)
	res, err := b.eval(ctx, "tenant", scriptTenant, []string{b.keys.tenant(tenant), b.keys.defaults()}, args...)
	if err != nil {
		return nil, err
	}
	l, err := asList(res, "tenant reply")
	if err != nil || len(l) != 3 {
		return nil, b.fault("tenant", errReply{"tenant reply"})
	}
	own, err1 := asList(l[1], "tenant fields")
	def, err2 := asList(l[2], "tenant defaults")
	if err1 != nil || err2 != nil || len(own) != 10 || len(def) != 4 {
		return nil, b.fault("tenant", errReply{"tenant fields"})
	}
	return tenantInfo(tenant, own, tenantConfig(def), micros(asString(l[0]))), nil
}

// tenantInfo reads a tenant's stored fields l, w, b, mw, pu and its counts
// n:scheduled, n:pending, n:waiting, n:active, n:retrying, as tenant.lua
// and tenants.lua return them.
func tenantInfo(tenant string, own []any, def queue.TenantConfig, now time.Time) *queue.TenantInfo {
	info := &queue.TenantInfo{Tenant: tenant, Own: tenantConfig(own)}
	info.Effective = info.Own.Effective(def)
	if pu := micros(asString(own[4])); pu.After(now) {
		info.PausedUntil = pu
	}
	n := func(i int) int64 { return asInt(own[i]) }
	info.Scheduled, info.Pending, info.Waiting, info.Active, info.Retrying = n(5), n(6), n(7), n(8), n(9)
	return info
}

// tenantConfig reads the stored fields l, w, b, mw (µs).
func tenantConfig(f []any) queue.TenantConfig {
	return queue.TenantConfig{
		Limit: atoi(asString(f[0])), Weight: atoi(asString(f[1])), Backlog: atoi(asString(f[2])),
		MaxWait: time.Duration(asInt(f[3])) * time.Microsecond,
	}
}

// SetAging implements backend.TenantBackend: one write to the queue's sched
// hash, read by the scripts when a job of the queue first becomes ready.
func (b *Backend) SetAging(ctx context.Context, q string, step int) error {
	if err := b.needSched(queue.CapTenants); err != nil {
		return err
	}
	if b.closed.Load() {
		return errClosed
	}
	if err := b.client.HSet(ctx, b.keys.queue(q).keys[keySched], "ag", step).Err(); err != nil {
		return b.fault("set aging", err)
	}
	return nil
}

// Pause implements backend.TenantBackend. A paused tenant's or group's
// pending jobs move to waiting in the same script, and its waiting jobs are
// released there when it resumes (d <= 0); a paused queue keeps its jobs
// pending, and Lease skips it. The end of a queue's pause is kept in the
// queue's own key (sluice:queue:{q}:paused).
func (b *Backend) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	if err := b.needSched(queue.CapTenants); err != nil {
		return time.Time{}, err
	}
	var key string
	var extra []any
	switch scope.Kind {
	case queue.ScopeTenant:
		key = b.keys.tenant(scope.Name)
	case queue.ScopeGroup:
		key = b.keys.group(scope.Name)
	case queue.ScopeQueue:
		k := b.keys.queue(scope.Name)
		key, extra = k.keys[keyPaused], []any{k.channel}
		// Stats lists registered queues: a queue paused before its first
		// job must be among them, or its pause could not be seen (nor
		// lifted) from the dashboard. SADD is idempotent.
		if d > 0 {
			if err := b.client.SAdd(ctx, b.keys.registry, scope.Name).Err(); err != nil {
				return time.Time{}, b.fault("pause", err)
			}
		}
	default:
		return time.Time{}, backend.InvalidArgument(queue.Field("Scope", "Kind"), "must be tenant, group or queue, got %q", scope.Kind)
	}
	_, args := b.group(nil, 4)
	args = append(append(args, string(scope.Kind), scope.Name, us(max(d, 0))), extra...)
	res, err := b.eval(ctx, "pause", scriptPause, []string{key}, args...)
	if err != nil {
		return time.Time{}, err
	}
	l, err := asList(res, "pause reply")
	if err != nil || len(l) == 0 {
		return time.Time{}, b.fault("pause", errReply{"pause reply"})
	}
	if asString(l[0]) == codeNotFound {
		return time.Time{}, notFoundGroup(scope.Name)
	}
	if len(l) != 3 {
		return time.Time{}, b.fault("pause", errReply{"pause reply"})
	}
	until, now := micros(asString(l[1])), micros(asString(l[2]))
	if !until.After(now) {
		return time.Time{}, nil
	}
	return until, nil
}
