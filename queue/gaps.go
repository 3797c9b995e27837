package queue

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/queue/backend"
)

// Gap is a place where tenant or group settings made through a backend do
// not hold: the queues of one routed backend. Jobs that would need the
// settings there are refused at enqueue (*NotEnforcedError); a Gap lets
// whoever sets a limit say so at once.
type Gap struct {
	// Backend names the backend, such as "amqpqueue".
	Backend string
	// Queues are the queues it holds, when the router can tell (see
	// QueueLister); empty otherwise.
	Queues []string
	// Missing is the capability the settings need there.
	Missing Capability
	// Reason says why they do not hold.
	Reason string
}

// String says where and why, such as "queues scrape on amqpqueue: no
// tenant scheduling (jobs of a limited tenant are refused there)".
func (g Gap) String() string {
	where := "the queues of " + g.Backend
	if len(g.Queues) > 0 {
		where = "queues " + strings.Join(g.Queues, ", ") + " on " + g.Backend
	}
	return where + ": " + g.Reason
}

// Gaps returns where settings of c (CapTenants or CapGroups) made through
// b do not hold: nothing for a backend that is not a router, since it
// holds every queue itself (a backend without c refuses the settings
// outright). For a router, tenant settings reach every routed backend
// that has CapTenants, so the gaps are those without it; groups are kept
// by the default backend alone, so every other backend is a gap.
func Gaps(b backend.Backend, c Capability) []Gap {
	r := b.Features().Router
	if r == nil {
		return nil
	}
	var out []Gap
	ql, _ := r.(backend.QueueLister)
	def := holder(b)
	for _, inner := range r.Backends() {
		if inner == b || inner == def {
			continue
		}
		if g, ok := gapOf(inner, c, def); ok {
			if ql != nil {
				g.Queues = ql.QueuesOf(inner)
			}
			out = append(out, g)
		}
	}
	return out
}

// gapOf says whether settings of c kept on def fail to hold on inner.
func gapOf(inner backend.Backend, c Capability, def backend.Backend) (Gap, bool) {
	f := inner.Features()
	g := Gap{Backend: f.Name, Missing: c}
	switch {
	case !backend.CommonCapabilities(inner).Has(c):
		g.Reason = fmt.Sprintf("no %s there (jobs that need it are refused)", c)
	case c == CapGroups:
		g.Reason = fmt.Sprintf("groups are kept on %s (jobs of a group are refused there)", def.Features().Name)
	default:
		return Gap{}, false
	}
	return g, true
}

// Gaps returns where tenant (CapTenants) or group (CapGroups) settings
// made through the client do not hold; see Gaps.
func (c *Client) Gaps(feature Capability) []Gap { return Gaps(c.b, feature) }
