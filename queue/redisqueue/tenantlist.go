package redisqueue

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantLister = (*Backend)(nil)

// tenantStep bounds how many tenants one script of the tenant list reads:
// the busiest order ranks every tenant, so a Tenants call reads the
// registry in steps of this many names, each its own short script, and
// other clients of the server wait at most one step at a time. A step
// holds Redis for about 2 ms (BenchmarkTenantsBusiest, measured with
// SLOWLOG: 10,000 tenants take 40 steps and about 100 ms in all).
var tenantStep = 250

// Tenants implements backend.TenantLister. Tenants come from a registry the
// transition scripts keep with the tenants' counts (a tenant is added when
// it gains its first unfinished job or settings, dropped in the script
// that leaves it with neither), never from the jobs themselves.
//
// By name, a page is one script reading Limit+1 names. Busiest first, the
// call reads every registered tenant, tenantStep (250) at a time, and
// keeps only the best Limit+1 after the cursor: its cost grows with the
// number of tenants, not with their jobs, and no single script reads more
// than tenantStep of them. Each step is read atomically; counts may move
// between steps as between pages. On a Redis Cluster client it returns an
// *queue.UnsupportedError.
func (b *Backend) Tenants(ctx context.Context, f queue.TenantFilter) (*queue.TenantPage, error) {
	if err := b.needSched(queue.CapTenantList); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	busiest := f.Order == queue.TenantsBusiest
	cur, err := parseTenantCursor(f.Cursor, busiest)
	if err != nil {
		return nil, err
	}
	if busiest {
		return b.tenantsBusiest(ctx, cur, limit)
	}
	return b.tenantsByName(ctx, cur, limit)
}

// tenantsByName reads the page after cursor c in one step.
func (b *Backend) tenantsByName(ctx context.Context, c *tenantCursor, limit int) (*queue.TenantPage, error) {
	start := "-"
	if c != nil {
		start = "(" + c.name
	}
	got, seen, last, err := b.tenantsStep(ctx, start, limit+1)
	if err != nil {
		return nil, err
	}
	page := &queue.TenantPage{Tenants: got}
	switch {
	case len(got) > limit:
		page.Tenants = got[:limit]
		page.Next = tenantNext(got[limit-1], false)
	case seen > limit:
		// Names without jobs or settings were skipped: go on after them.
		page.Next = "n:" + last
	}
	return page, nil
}

// tenantsBusiest reads the whole registry in steps and keeps the best
// limit+1 tenants after cursor c.
func (b *Backend) tenantsBusiest(ctx context.Context, c *tenantCursor, limit int) (*queue.TenantPage, error) {
	var top []*queue.TenantInfo
	start := "-"
	for {
		got, seen, last, err := b.tenantsStep(ctx, start, tenantStep)
		if err != nil {
			return nil, err
		}
		for _, info := range got {
			if c != nil && !c.before(info) {
				continue
			}
			i, _ := slices.BinarySearchFunc(top, info, busier)
			if i > limit {
				continue
			}
			top = slices.Insert(top, i, info)
			if len(top) > limit+1 {
				top = top[:limit+1]
			}
		}
		if seen < tenantStep {
			break
		}
		start = "(" + last
	}
	page := &queue.TenantPage{Tenants: top}
	if len(top) > limit {
		page.Tenants = top[:limit]
		page.Next = tenantNext(top[limit-1], true)
	}
	return page, nil
}

// busier orders tenants busiest first: most active jobs, then the larger
// backlog (pending plus waiting), then by name.
func busier(a, b *queue.TenantInfo) int {
	if c := cmp.Compare(b.Active, a.Active); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Backlog(), a.Backlog()); c != 0 {
		return c
	}
	return strings.Compare(a.Tenant, b.Tenant)
}

// tenantsStep runs the tenants script: up to count registered tenants
// from the ZRANGEBYLEX bound start. It returns those with unfinished jobs
// or settings, how many names it read and the last of them.
func (b *Backend) tenantsStep(ctx context.Context, start string, count int) ([]*queue.TenantInfo, int, string, error) {
	_, args := b.group(nil, 2)
	args = append(args, start, count)
	res, err := b.eval(ctx, "tenants", scriptTenants, []string{b.keys.sched("tenants"), b.keys.defaults()}, args...)
	if err != nil {
		return nil, 0, "", err
	}
	l, err := asList(res, "tenants reply")
	if err != nil || len(l) != 3 {
		return nil, 0, "", b.fault("tenants", errReply{"tenants reply"})
	}
	def, err1 := asList(l[1], "tenant defaults")
	rows, err2 := asList(l[2], "tenants")
	if err1 != nil || err2 != nil || len(def) != 4 {
		return nil, 0, "", b.fault("tenants", errReply{"tenants reply"})
	}
	now, dcfg := micros(asString(l[0])), tenantConfig(def)
	out := make([]*queue.TenantInfo, 0, len(rows))
	last := ""
	for _, r := range rows {
		row, err := asList(r, "tenant")
		if err != nil || len(row) != 2 {
			return nil, 0, "", b.fault("tenants", errReply{"tenant"})
		}
		own, err := asList(row[1], "tenant fields")
		if err != nil || len(own) != 10 {
			return nil, 0, "", b.fault("tenants", errReply{"tenant fields"})
		}
		last = asString(row[0])
		if listed(own) {
			out = append(out, tenantInfo(last, own, dcfg, now))
		}
	}
	return out, len(rows), last, nil
}

// listed reports whether a tenant's fields show settings of its own (l is
// written with every setting, pu by a pause) or unfinished jobs. The
// scripts keep the registry to exactly these; the check keeps a page
// right even if a name outlived them.
func listed(own []any) bool {
	if asString(own[0]) != "" || asString(own[4]) != "" {
		return true
	}
	for _, v := range own[5:] {
		if asInt(v) > 0 {
			return true
		}
	}
	return false
}

// tenantNext is the cursor after info: "n:<name>" by name, and
// "b:<active>:<backlog>:<name>" busiest first, the keys the page was
// sorted by (the same form as the SQLite store's).
func tenantNext(info *queue.TenantInfo, busiest bool) string {
	if !busiest {
		return "n:" + info.Tenant
	}
	return "b:" + strconv.FormatInt(info.Active, 10) + ":" + strconv.FormatInt(info.Backlog(), 10) + ":" + info.Tenant
}

// tenantCursor is a parsed TenantFilter.Cursor: the last tenant of the
// previous page and, busiest first, its order keys.
type tenantCursor struct {
	name            string
	active, backlog int64
}

// before reports whether info comes after the cursor in busiest order.
func (c *tenantCursor) before(info *queue.TenantInfo) bool {
	return busier(&queue.TenantInfo{Tenant: c.name, Active: c.active, Pending: c.backlog}, info) < 0
}

// parseTenantCursor parses a cursor of the given order; nil for none.
func parseTenantCursor(s string, busiest bool) (*tenantCursor, error) {
	if s == "" {
		return nil, nil
	}
	bad := backend.InvalidArgument(queue.Field("TenantFilter", "Cursor"), "is not a cursor of this order from this backend: %q", s)
	if !busiest {
		name, ok := strings.CutPrefix(s, "n:")
		if !ok {
			return nil, bad
		}
		return &tenantCursor{name: name}, nil
	}
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 || parts[0] != "b" {
		return nil, bad
	}
	active, err1 := strconv.ParseInt(parts[1], 10, 64)
	backlog, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	return &tenantCursor{name: parts[3], active: active, backlog: backlog}, nil
}
