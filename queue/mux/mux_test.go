package mux_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// plain is a SQLite backend that declares fewer capabilities than it has:
// a backend such as a broker lane, for checks that run without a broker.
// Its Features are named "plain" and keep only the parts whose capability
// caps has, and no outbox; the methods of every part are still there.
type plain struct {
	*sqlitequeue.Backend
	caps queue.Capabilities
}

func (p plain) Features() backend.Features {
	f := p.Backend.Features()
	f.Name, f.Capabilities, f.Outbox = "plain", p.caps, nil
	if !p.caps.Has(queue.CapTenants) {
		f.Tenants = nil
	}
	if !p.caps.Has(queue.CapTenantList) {
		f.TenantList = nil
	}
	if !p.caps.Has(queue.CapGroups) {
		f.Groups = nil
	}
	if !p.caps.Has(queue.CapFlows) {
		f.Flows = nil
	}
	if !p.caps.Has(queue.CapRetry) {
		f.Retry = nil
	}
	if !p.caps.Has(queue.CapSchedules) {
		f.Schedules = nil
	}
	if !p.caps.Has(queue.CapProgress) {
		f.Progress = nil
	}
	if !p.caps.Has(queue.CapEvents) {
		f.Events = nil
	}
	return f
}

func TestNewRejectsBadRoutes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(queuetest.Epoch)
	a, b := openSQLite(t, clk, sqlitequeue.Options{}), openSQLite(t, clk, sqlitequeue.Options{})
	tests := []struct {
		name   string
		def    backend.Backend
		routes []mux.Route
		field  string
	}{
		{"no default", nil, nil, "default backend"},
		{"empty name", a, []mux.Route{{Backend: b, Queues: []string{"q"}}}, "routes[0].Name"},
		{"name with a digit first", a, []mux.Route{{Name: "1x", Backend: b, Queues: []string{"q"}}}, "routes[0].Name"},
		{"name with a dot", a, []mux.Route{{Name: "a.b", Backend: b, Queues: []string{"q"}}}, "routes[0].Name"},
		{"no backend", a, []mux.Route{{Name: "lane", Queues: []string{"q"}}}, "routes[0].Backend"},
		{"default again", a, []mux.Route{{Name: "lane", Backend: a, Queues: []string{"q"}}}, "routes[0].Backend"},
		{"no queues", a, []mux.Route{{Name: "lane", Backend: b}}, "routes[0].Queues"},
		{"empty queue", a, []mux.Route{{Name: "lane", Backend: b, Queues: []string{""}}}, "routes[0].Queues"},
		{"duplicate name", a, []mux.Route{{Name: "lane", Backend: b, Queues: []string{"q"}}, {Name: "lane", Backend: plain{b, 0}, Queues: []string{"r"}}}, "routes[1].Name"},
		{"queue on two routes", a, []mux.Route{{Name: "lane", Backend: b, Queues: []string{"q"}}, {Name: "other", Backend: plain{b, 0}, Queues: []string{"q"}}}, "routes[1].Queues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mux.New(tt.def, tt.routes...)
			if !errors.Is(err, queue.ErrInvalidArgument) {
				t.Fatalf("New = %v, want ErrInvalidArgument", err)
			}
			if !strings.HasPrefix(err.Error(), "mux: "+tt.field+" ") {
				t.Errorf("New = %q, want it to start with mux: %s", err, tt.field)
			}
		})
	}
}

// Ids name their backend: the default's pass through, a route's carry its
// name, and every call by id reaches the right store.
func TestIDsNameTheirBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	a, b := openSQLite(t, clk, sqlitequeue.Options{}), openSQLite(t, clk, sqlitequeue.Options{})
	m := newMux(t, a, mux.Route{Name: "lane", Backend: b, Queues: []string{"fast"}})
	c := queue.NewClient(m)
	res, err := c.EnqueueBatch(ctx, []queue.JobSpec{{Queue: "slow", Kind: "k"}, {Queue: "fast", Kind: "k"}, {Queue: "slow", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	slow, fast := res[0].Job, res[1].Job
	if slow.ID != "1" || fast.ID != "lane.1" || res[2].Job.ID != "2" {
		t.Fatalf("ids = %s %s %s, want 1 lane.1 2", slow.ID, fast.ID, res[2].Job.ID)
	}
	if j, err := b.Get(ctx, "1"); err != nil || j.Queue != "fast" {
		t.Fatalf("routed backend's job 1 = %v, %v; want the fast job", j, err)
	}
	ls, err := m.Lease(ctx, backend.LeaseRequest{Queues: []string{"fast"}, WorkerID: "w", Max: 5, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 || ls[0].Job.ID != "lane.1" {
		t.Fatalf("Lease(fast) = %v, %v; want lane.1", ls, err)
	}
	if err := m.Complete(ctx, "lane.1", ls[0].Token, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id    string
		state queue.State
	}{{"lane.1", queue.StateCompleted}, {"1", queue.StatePending}} {
		j, err := m.Get(ctx, tt.id)
		if err != nil || j.ID != tt.id || j.State != tt.state {
			t.Errorf("Get(%s) = %+v, %v; want %s", tt.id, j, err, tt.state)
		}
	}
	if _, err := m.Get(ctx, "lane.99"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Get(lane.99) = %v, want ErrNotFound", err)
	}
}

// A spec asking for a feature its queue's backend lacks is refused with
// an *UnsupportedError naming that backend; the same spec on a queue of
// the default passes.
func TestCapabilitiesPerQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	lane := plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.NewCapabilities(queue.CapDelay)}
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{Name: "lane", Backend: lane, Queues: []string{"fast"}})
	c := queue.NewClient(m)
	unique := func(q string) queue.JobSpec { return queue.JobSpec{Queue: q, Kind: "k", UniqueKey: "u"} }
	if _, err := c.Enqueue(ctx, unique("slow")); err != nil {
		t.Fatalf("unique job on the default: %v", err)
	}
	_, err := c.Enqueue(ctx, unique("fast"))
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Feature != queue.CapUnique || ue.Field != "JobSpec.UniqueKey" || ue.Backend != "plain" {
		t.Fatalf("unique job on the lane = %v, want an *UnsupportedError for JobSpec.UniqueKey on plain", err)
	}
	_, err = c.EnqueueBatch(ctx, []queue.JobSpec{unique("slow"), {Queue: "fast", Kind: "k", Group: "g"}})
	if !errors.As(err, &ue) || ue.Field != "specs[1].JobSpec.Group" {
		t.Fatalf("batch with a group job on the lane = %v, want specs[1].JobSpec.Group refused", err)
	}
	if got := backend.CapabilitiesFor(m, "fast"); got != lane.caps {
		t.Errorf("CapabilitiesFor(fast) = %v, want %v", got, lane.caps)
	}
	if got := backend.CapabilitiesFor(m, "slow"); got != queue.AllCapabilities.Without(queue.CapEvents) {
		t.Errorf("CapabilitiesFor(slow) = %v, want all", got)
	}
	if got := backend.CommonCapabilities(m); got != lane.caps {
		t.Errorf("CommonCapabilities = %v, want %v", got, lane.caps)
	}
	if got := backend.CapabilitiesOf(m); got.Has(queue.CapAtomicBatch) || !got.Has(queue.CapGroups) || !got.Has(queue.CapTenants) {
		t.Errorf("Capabilities = %v, want the default's without atomic batches", got)
	}
}

// A batch over two backends whose second store fails keeps what the first
// stored and says so.
func TestEnqueuePartial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	a, b := openSQLite(t, clk, sqlitequeue.Options{}), openSQLite(t, clk, sqlitequeue.Options{})
	m := newMux(t, a, mux.Route{Name: "lane", Backend: b, Queues: []string{"fast"}})
	b.Close()
	_, err := m.Enqueue(ctx, []queue.JobSpec{{Queue: "fast", Kind: "k", MaxAttempts: 1}, {Queue: "slow", Kind: "k", MaxAttempts: 1}})
	var pe *queue.PartialError
	if !errors.As(err, &pe) || pe.Route != "lane" || !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Enqueue = %v, want a *queue.PartialError from route lane matching ErrClosed", err)
	}
	if pe.Results[0].Job != nil || pe.Results[1].Job == nil || pe.Results[1].Job.Queue != "slow" {
		t.Fatalf("Results = %+v, want only the slow job stored", pe.Results)
	}
	// Nothing stored yet: the plain error of the backend.
	_, err = m.Enqueue(ctx, []queue.JobSpec{{Queue: "fast", Kind: "k", MaxAttempts: 1}})
	if errors.As(err, &pe) || !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Enqueue(fast) = %v, want ErrClosed, not partial", err)
	}
}

// List without a queue reads backend after backend, skipping those that
// cannot list; Stats merges the backends' queues.
func TestListAndStatsMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	second := openSQLite(t, clk, sqlitequeue.Options{})
	nolist := plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.AllCapabilities.Without(queue.CapList)}
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}),
		mux.Route{Name: "b", Backend: second, Queues: []string{"bq"}},
		mux.Route{Name: "c", Backend: nolist, Queues: []string{"cq"}})
	c := queue.NewClient(m)
	var specs []queue.JobSpec
	for _, q := range []string{"aq", "bq", "cq", "aq", "bq", "cq", "bq"} {
		specs = append(specs, queue.JobSpec{Queue: q, Kind: "k"})
	}
	if _, err := c.EnqueueBatch(ctx, specs); err != nil {
		t.Fatal(err)
	}
	var got []string
	f := queue.ListFilter{Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("List does not end")
		}
		p, err := c.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	if want := "1 2 b.1 b.2 b.3"; strings.Join(got, " ") != want {
		t.Errorf("List = %v, want %s", got, want)
	}
	if _, err := c.List(ctx, queue.ListFilter{Cursor: "9:x"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("List(bad cursor) = %v, want ErrInvalidArgument", err)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, s := range st {
		parts = append(parts, s.Queue+"="+strconv.FormatInt(s.Counts[queue.StatePending], 10))
	}
	if got, want := strings.Join(parts, " "), "aq=2 bq=3 cq=2"; got != want {
		t.Errorf("Stats = %s, want %s", got, want)
	}
}
