package mux

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Route places queues on a backend other than the default.
type Route struct {
	// Name identifies the backend: it starts the ids of its jobs (Name,
	// '.', the backend's id) and names it in errors. Required: a lowercase
	// letter, then lowercase letters, digits, '_' or '-'; at most 32
	// bytes; unique among the routes.
	Name string
	// Backend holds the queues. Required, and different from the default
	// and from every other route's.
	Backend backend.Backend
	// Queues are the queues the backend holds. At least one; a queue is on
	// one route only.
	Queues []string
}

// namePattern is what Route.Name must match. Starting with a letter keeps
// routed ids apart from the ids of every Sluice backend as a default
// (SQLite's and Redis's start with a digit; the lane's hold no '.').
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// route is one backend with the prefix of its ids ("" for the default).
type route struct {
	name   string
	prefix string
	b      backend.Backend
}

// Backend is the router: a backend.Backend that places each queue on one of
// several backends. It is safe for concurrent use. It does not close its
// backends: whoever opened them closes them.
type Backend struct {
	routes  []route // the default first
	byQueue map[string]int
	turn    atomic.Uint32    // where the next multi-backend Lease starts
	feat    backend.Features // what Features returns, found once by New
}

var (
	_ backend.Backend       = (*Backend)(nil)
	_ backend.Router        = (*Backend)(nil)
	_ backend.Notifier      = (*Backend)(nil)
	_ backend.TenantBackend = (*Backend)(nil)
	_ backend.TenantLister  = (*Backend)(nil)
	_ backend.GroupBackend  = (*Backend)(nil)
	_ backend.Retrier       = (*Backend)(nil)
	_ backend.Outbox        = (*Backend)(nil)
)

// New returns a router holding every queue on def except those a route
// names. A bad route is an error naming the field and the rule, matching
// queue.ErrInvalidArgument.
func New(def backend.Backend, routes ...Route) (*Backend, error) {
	if def == nil {
		return nil, invalid("default backend", "is required")
	}
	m := &Backend{routes: []route{{b: def}}, byQueue: map[string]int{}}
	names := map[string]bool{}
	for i, r := range routes {
		field := fmt.Sprintf("routes[%d]", i)
		switch {
		case !namePattern.MatchString(r.Name):
			return nil, invalid(field+".Name", "must be a lowercase letter then lowercase letters, digits, '_' or '-', at most 32 bytes, got %q", r.Name)
		case names[r.Name]:
			return nil, invalid(field+".Name", "duplicate name %q", r.Name)
		case r.Backend == nil:
			return nil, invalid(field+".Backend", "is required")
		case len(r.Queues) == 0:
			return nil, invalid(field+".Queues", "must name at least one queue")
		}
		for _, o := range m.routes {
			if o.b == r.Backend {
				return nil, invalid(field+".Backend", "is already routed to (each backend once, the default included)")
			}
		}
		names[r.Name] = true
		m.routes = append(m.routes, route{name: r.Name, prefix: r.Name + ".", b: r.Backend})
		for _, q := range r.Queues {
			if q == "" {
				return nil, invalid(field+".Queues", "must not hold an empty queue name")
			}
			if j, dup := m.byQueue[q]; dup {
				return nil, invalid(field+".Queues", "queue %q is already on route %q", q, m.routes[j].name)
			}
			m.byQueue[q] = len(m.routes) - 1
		}
	}
	m.feat = m.features()
	return m, nil
}

// invalid returns an error naming the field and the rule, matching
// queue.ErrInvalidArgument.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("mux: %s %s: %w", field, fmt.Sprintf(format, args...), queue.ErrInvalidArgument)
}

// Route implements backend.Router: the backend holding queue's jobs.
func (m *Backend) Route(q string) backend.Backend { return m.routes[m.index(q)].b }

// Backends implements backend.Router: every backend, the default first.
func (m *Backend) Backends() []backend.Backend {
	out := make([]backend.Backend, len(m.routes))
	for i, r := range m.routes {
		out[i] = r.b
	}
	return out
}

// Default returns the backend of the queues no route names.
func (m *Backend) Default() backend.Backend { return m.routes[0].b }

// Features implements backend.Backend. The router is named "mux" and has
// the parts and capabilities of its default backend, which serves tenant
// settings, groups, the outbox and the tenants' webhook secrets, without CapAtomicBatch when there are
// routes (a batch over several backends is stored per backend); it
// notifies when any routed backend does. Its parts are the router itself,
// whose methods forward (see their docs), and its Router part answers what
// one queue has (backend.CapabilitiesFor). A backend answers the same for its
// life, so the router's answer is found once, by New.
func (m *Backend) Features() backend.Features { return m.feat }

func (m *Backend) features() backend.Features {
	def := m.Default().Features()
	f := backend.Features{Name: "mux", Capabilities: backend.CapabilitiesOf(m.Default()), Router: m}
	if len(m.routes) > 1 {
		f.Capabilities = f.Capabilities.Without(queue.CapAtomicBatch)
	}
	if def.Tenants != nil {
		f.Tenants = m
	}
	if def.TenantList != nil {
		f.TenantList = m
	}
	if def.Groups != nil {
		f.Groups = m
	}
	if def.Retry != nil {
		f.Retry = m
	}
	if def.Flows != nil {
		f.Flows = m
	}
	if def.Outbox != nil {
		f.Outbox = m
	}
	if def.Schedules != nil {
		f.Schedules = m
	}
	if def.TenantSecrets != nil {
		f.TenantSecrets = m
	}
	m.watchParts(&f) // progress.go
	for _, r := range m.routes {
		if r.b.Features().Notify != nil {
			f.Notify = m
			break
		}
	}
	return f
}

func (m *Backend) index(q string) int {
	if i, ok := m.byQueue[q]; ok {
		return i
	}
	return 0
}

// locate finds the route of a job id and the backend's own id. An id with
// no route's prefix is the default's.
func (m *Backend) locate(id string) (route, string) {
	for _, r := range m.routes[1:] {
		if inner, ok := strings.CutPrefix(id, r.prefix); ok {
			return r, inner
		}
	}
	return m.routes[0], id
}

// outer returns a copy of j with the id the router shows: the backend's
// structs are never changed, since a backend may keep them.
func (r route) outer(j *queue.Job) *queue.Job {
	if j == nil || r.prefix == "" {
		return j
	}
	cp := *j
	cp.ID = r.prefix + j.ID
	return &cp
}

// wrap names the route in a store fault; the sentinels stay matchable.
func (r route) wrap(err error) error {
	if err == nil || r.prefix == "" {
		return err
	}
	return fmt.Errorf("mux: route %q: %w", r.name, err)
}

// split groups the positions of queues by route index, in route order.
func (m *Backend) split(queues []string) map[int][]string {
	out := map[int][]string{}
	for _, q := range queues {
		i := m.index(q)
		out[i] = append(out[i], q)
	}
	return out
}
