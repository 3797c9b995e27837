package pgqueue

import (
	"errors"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
)

// leaseScopes tracks, during one pick, each scope's active jobs including
// the ones picked so far, and what the picks owe once they are active.
type leaseScopes struct {
	sc     *sched
	active map[string]int64 // per tenant
	groups map[string]*leaseGroup
	// Fills owed: a job held for one scope left room in its other scope.
	fillTenants, fillGroups []string
}

// leaseGroup is a group as one pick sees it.
type leaseGroup struct {
	row     *groupRow // nil: the group is gone
	active  int64
	started bool // a job with a MinInterval was picked
}

func (ls *leaseScopes) group(id string) (*leaseGroup, error) {
	if g, ok := ls.groups[id]; ok {
		return g, nil
	}
	if ls.groups == nil {
		ls.groups = map[string]*leaseGroup{}
	}
	g := &leaseGroup{}
	row, err := ls.sc.group(id)
	switch {
	case errors.Is(err, queue.ErrGroupNotFound):
	case err != nil:
		return nil, err
	default:
		g.row = row
		if row.spec.MaxConcurrency > 0 {
			if g.active, err = ls.sc.groupCount(id, "active"); err != nil {
				return nil, err
			}
		}
	}
	ls.groups[id] = g
	return g, nil
}

// check returns "" and counts c as started when its tenant and group let
// it start now, or the scope that holds it back.
func (ls *leaseScopes) check(c cand) (string, error) {
	sc := ls.sc
	n, counted := int64(0), false
	if c.tenant != "" {
		t, err := sc.tenant(c.tenant)
		if err != nil {
			return "", err
		}
		var ok bool
		n, ok = ls.active[c.tenant]
		if !ok && t.eff.Limit != queue.Unlimited {
			if n, err = sc.tenantCount(c.tenant, "active"); err != nil {
				return "", err
			}
		}
		room, wake := rules.TenantRoom(t.eff.Limit, fromNanos(t.pausedUntil), fromNanos(sc.now), n)
		if !wake.IsZero() {
			return holdTenant, sc.wakeTenant(c.tenant, toNanos(wake))
		}
		if !room {
			return holdTenant, nil
		}
		counted = true
	}
	var g *leaseGroup
	if c.grp != "" {
		var err error
		if g, err = ls.group(c.grp); err != nil {
			return "", err
		}
		if g.row != nil {
			ok, wake := rules.GroupMayStart(g.row.limits(), fromNanos(sc.now), g.active)
			if !wake.IsZero() {
				return holdGroup, sc.wakeGroup(c.grp, toNanos(wake))
			}
			if !ok {
				return holdGroup, nil
			}
		}
	}
	if counted {
		ls.active[c.tenant] = n + 1
	}
	if g != nil && g.row != nil {
		g.active++
		if g.row.spec.MinInterval > 0 {
			g.row.lastStart, g.started = sc.now, true
		}
	}
	return "", nil
}

// owe records the fill a candidate moved to waiting for hold owes its
// other scope.
func (ls *leaseScopes) owe(c cand, hold string) {
	if hold == holdGroup {
		ls.fillTenants = addOnce(ls.fillTenants, c.tenant)
	}
	if hold == holdTenant {
		ls.fillGroups = addOnce(ls.fillGroups, c.grp)
	}
}

// started records what the picked jobs, now active, change: the last
// start of groups with a crawl delay (and a wake when it ends), then the
// fills owed, tenants first.
func (ls *leaseScopes) started() error {
	sc := ls.sc
	for id, g := range ls.groups {
		if !g.started {
			continue
		}
		if err := sc.exec(`UPDATE __schema__.job_groups SET last_start = $1 WHERE id = $2`, sc.now, id); err != nil {
			return err
		}
		if err := sc.wakeGroup(id, after(sc.now, g.row.spec.MinInterval)); err != nil {
			return err
		}
	}
	for _, t := range ls.fillTenants {
		if err := sc.fillTenant(t); err != nil {
			return err
		}
	}
	return sc.fillGroups(ls.fillGroups)
}
