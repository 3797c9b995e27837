package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/config"
)

// newBudgets returns the budgets kept in the rate-limit store, or nil
// when the store cannot admit claims (it is not a ratelimit.Admitter):
// the budget routes then answer 501.
func newBudgets(store ratelimit.Store, clk clock.Clock) *budget.Budgets {
	a, ok := ratelimit.Facet[ratelimit.Admitter](store)
	if !ok {
		return nil
	}
	b, err := budget.New(budget.Options{Store: a, Clock: clk})
	if err != nil {
		return nil // only for a nil store, which Facet does not return
	}
	return b
}

// applyBudgets swaps in cfg's budget definitions. The config was
// validated, so an error here is a definition package budget refuses that
// the file's checks let through.
func (s *Server) applyBudgets(cfg *config.Config) error {
	if s.budgets == nil {
		return nil
	}
	if err := s.budgets.Replace(cfg.BudgetConfigs()); err != nil {
		return fmt.Errorf("server: budgets: %w", err)
	}
	return nil
}

// budgetBody is a budget's state in the API.
type budgetBody struct {
	Budget      string            `json:"budget"`
	Tenant      string            `json:"tenant,omitempty"`
	ClosedForMS int64             `json:"closed_for_ms"`
	Factor      float64           `json:"factor"`
	Limits      []budgetLimitBody `json:"limits"`
}

type budgetLimitBody struct {
	Scope      string `json:"scope"`
	Limit      string `json:"limit"`
	Capacity   int64  `json:"capacity"`
	Used       int64  `json:"used"`
	Room       int64  `json:"room"`
	NextRoomMS int64  `json:"next_room_ms"`
}

func toBudgetBody(st budget.Status) budgetBody {
	out := budgetBody{Budget: st.Budget, Tenant: st.Tenant, ClosedForMS: ceilMS(st.ClosedFor), Factor: st.Factor, Limits: []budgetLimitBody{}}
	for _, l := range st.Limits {
		out.Limits = append(out.Limits, budgetLimitBody{Scope: l.Scope, Limit: l.Limit, Capacity: l.Capacity,
			Used: l.Used, Room: l.Room, NextRoomMS: ceilMS(l.NextRoom)})
	}
	return out
}

// ceilMS rounds d up to whole milliseconds: a waiter told to come back
// after it must not come back before.
func ceilMS(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// budgetsOn answers 501 and returns false when the store keeps no
// budgets.
func (s *Server) budgetsOn(w http.ResponseWriter) bool {
	if s.budgets == nil {
		writeProblem(w, &problem{Status: http.StatusNotImplemented, Detail: "the rate-limit store does not keep budgets"}, nil)
		return false
	}
	return true
}

// budgetError answers an error of a budget call.
func budgetError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, budget.ErrUnknownBudget):
		writeProblem(w, notFound("unknown budget %q", clip(r.PathValue("budget"))), nil)
	case errors.Is(err, ratelimit.ErrInvalidArgument):
		writeProblem(w, badRequest("%v", err), nil)
	default:
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
	}
}

// handleBudgets answers GET /v1/budgets: every budget's totals.
func (s *Server) handleBudgets(w http.ResponseWriter, r *http.Request) {
	if !s.budgetsOn(w) {
		return
	}
	out := struct {
		Budgets []budgetBody `json:"budgets"`
	}{Budgets: []budgetBody{}}
	for _, name := range s.budgets.Names() {
		st, err := s.budgets.Status(r.Context(), name, "")
		if errors.Is(err, budget.ErrUnknownBudget) {
			continue // removed by a reload meanwhile
		}
		if err != nil {
			budgetError(w, r, err)
			return
		}
		out.Budgets = append(out.Budgets, toBudgetBody(st))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleBudget answers GET /v1/budgets/{budget}[?tenant=]: the totals
// and, for a tenant, its own limits.
func (s *Server) handleBudget(w http.ResponseWriter, r *http.Request) {
	if !s.budgetsOn(w) {
		return
	}
	st, err := s.budgets.Status(r.Context(), r.PathValue("budget"), r.URL.Query().Get("tenant"))
	if err != nil {
		budgetError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toBudgetBody(st))
}

// closeBudgetBody is the request of POST /v1/budgets/{budget}/close.
type closeBudgetBody struct {
	// RetryAfterMS closes the budget for this long from now.
	RetryAfterMS int64 `json:"retry_after_ms"`
	// Until closes it until this time (RFC 3339), read here rather than
	// by encoding/json so that a bad one is refused by name.
	Until *string `json:"until"`
}

// handleCloseBudget answers POST /v1/budgets/{budget}/close: the upstream
// said 429 + Retry-After, so nothing on the budget starts anywhere until
// then.
func (s *Server) handleCloseBudget(w http.ResponseWriter, r *http.Request) {
	if !s.budgetsOn(w) {
		return
	}
	var body closeBudgetBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	until := s.clock.Now().Add(time.Duration(body.RetryAfterMS) * time.Millisecond)
	switch {
	case body.RetryAfterMS < 0:
		writeProblem(w, badRequest("retry_after_ms must not be negative, got %d", body.RetryAfterMS), nil)
		return
	case (body.RetryAfterMS > 0) == (body.Until != nil):
		writeProblem(w, badRequest("set exactly one of retry_after_ms and until"), nil)
		return
	case body.Until != nil:
		t, err := time.Parse(time.RFC3339, *body.Until)
		if err != nil {
			writeProblem(w, badRequest("until must be RFC 3339 (such as 2030-01-02T15:04:05Z), got %q", clip(*body.Until)), nil)
			return
		}
		until = t
	}
	opens, err := s.budgets.Close(r.Context(), r.PathValue("budget"), until)
	if err != nil {
		budgetError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"budget": r.PathValue("budget"), "closed_until": opens.UTC()})
}

// budgetCollector exports every budget's totals, read from the store at
// scrape time: sluice_budget_capacity, _used, _room and
// _next_room_seconds by budget and limit, and sluice_budget_closed_seconds
// by budget. Labels come from the config (budget and unit names), never
// from tenants.
type budgetCollector struct {
	b                                  *budget.Budgets
	capacity, used, room, next, closed *prometheus.Desc
}

func (m *metrics) watchBudgets(b *budget.Budgets) {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	m.reg.MustRegister(&budgetCollector{b: b,
		capacity: desc("sluice_budget_capacity", "A budget limit's capacity (burst, or in-flight maximum), by budget and limit (a unit or in-flight).", "budget", "limit"),
		used:     desc("sluice_budget_used", "What a budget limit holds now; above its capacity while in debt.", "budget", "limit"),
		room:     desc("sluice_budget_room", "What a budget limit could admit now.", "budget", "limit"),
		next:     desc("sluice_budget_next_room_seconds", "How long until a full budget limit has room for one more unit; 0 with room.", "budget", "limit"),
		closed:   desc("sluice_budget_closed_seconds", "How long a budget stays closed (after an upstream's 429); 0 when open.", "budget"),
	})
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.capacity, c.used, c.room, c.next, c.closed} {
		ch <- d
	}
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range c.b.Names() {
		st, err := c.b.Status(ctx, name, "")
		if errors.Is(err, budget.ErrUnknownBudget) {
			continue // removed by a reload meanwhile
		}
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.used, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(c.closed, prometheus.GaugeValue, st.ClosedFor.Seconds(), name)
		for _, l := range st.Limits {
			ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(l.Capacity), name, l.Limit)
			ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(l.Used), name, l.Limit)
			ch <- prometheus.MustNewConstMetric(c.room, prometheus.GaugeValue, float64(l.Room), name, l.Limit)
			ch <- prometheus.MustNewConstMetric(c.next, prometheus.GaugeValue, l.NextRoom.Seconds(), name, l.Limit)
		}
	}
}
