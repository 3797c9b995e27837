package server

import (
	"fmt"
	"slices"
	"testing"
)

// listIDs pages through GET /v1/jobs with query and returns the ids.
func listIDs(t *testing.T, h *harness, query string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for range 50 {
		l := h.do("GET", "/v1/jobs?limit=2&"+query+"&cursor="+cursor, "", "")
		if l.status != 200 {
			t.Fatalf("GET /v1/jobs?%s: %d %s", query, l.status, l.raw)
		}
		for _, j := range l.body["jobs"].([]any) {
			ids = append(ids, j.(map[string]any)["id"].(string))
		}
		next, _ := l.body["next"].(string)
		if next == "" {
			return ids
		}
		cursor = next
	}
	t.Fatalf("GET /v1/jobs?%s never ends", query)
	return nil
}

func TestListJobsFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	var all []string
	for i := range 9 {
		body := fmt.Sprintf(`{"queue":"q%d","kind":"k%d","tenant":"t%d","group":"g%d"}`, i%2, i%3, i%2, i%3)
		all = append(all, jobID(h.do("POST", "/v1/jobs", "", body)))
	}
	pick := func(idx ...int) []string {
		out := make([]string, len(idx))
		for i, n := range idx {
			out[i] = all[n]
		}
		return out
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"tenant=t1", pick(1, 3, 5, 7)},
		{"kind=k2", pick(2, 5, 8)},
		{"group=g0&tenant=t0", pick(0, 6)},
		{"queue=q0&kind=k1&order=oldest", pick(4)},
		{"tenant=t0&order=newest", pick(8, 6, 4, 2, 0)},
		{"order=newest&state=pending", pick(8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"tenant=nobody", nil},
	}
	for _, c := range cases {
		if got := listIDs(t, h, c.query); !slices.Equal(got, c.want) {
			t.Errorf("GET /v1/jobs?%s = %v, want %v", c.query, got, c.want)
		}
	}
	bad := []struct{ query, detail string }{
		{"order=sideways", `order must be "oldest" or "newest", got "sideways"`},
		{"tenant=a%01b", `tenant must not contain control characters, got "a\x01b"`},
		{"tenant=a%00b", `tenant (in the query) must not contain NUL (%00)`},
	}
	for _, c := range bad {
		if r := h.do("GET", "/v1/jobs?"+c.query, "", ""); r.status != 400 || r.body["detail"] != c.detail {
			t.Errorf("GET /v1/jobs?%s: %d %s, want 400 %q", c.query, r.status, r.raw, c.detail)
		}
	}
}

func TestListTenants(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	if r := h.do("PUT", "/v1/tenants/quiet/limit", "", `{"concurrency":4}`); r.status != 200 {
		t.Fatalf("set limit: %d %s", r.status, r.raw)
	}
	for _, tn := range []string{"acme", "acme", "globex", "globex", "globex"} {
		h.do("POST", "/v1/jobs", "", fmt.Sprintf(`{"queue":"q-%s","kind":"k","tenant":%q}`, tn, tn))
	}
	h.do("POST", "/v1/worker/lease", "", `{"queues":["q-acme"],"worker_id":"w","max":1}`)
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"acme", "globex", "quiet"}},
		{"order=name&limit=1", []string{"acme", "globex", "quiet"}},
		{"order=busiest", []string{"acme", "globex", "quiet"}},
		{"order=busiest&limit=2", []string{"acme", "globex", "quiet"}},
	}
	for _, c := range cases {
		var names []string
		cursor := ""
		for range 10 {
			r := h.do("GET", "/v1/tenants?"+c.query+"&cursor="+cursor, "", "")
			if r.status != 200 {
				t.Fatalf("GET /v1/tenants?%s: %d %s", c.query, r.status, r.raw)
			}
			for _, x := range r.body["tenants"].([]any) {
				names = append(names, x.(map[string]any)["tenant"].(string))
			}
			if cursor, _ = r.body["next"].(string); cursor == "" {
				break
			}
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("GET /v1/tenants?%s = %v, want %v", c.query, names, c.want)
		}
	}
	r := h.do("GET", "/v1/tenants?order=busiest&limit=1", "", "")
	first := r.body["tenants"].([]any)[0].(map[string]any)
	jobs := first["jobs"].(map[string]any)
	if first["tenant"] != "acme" || jobs["active"] != 1.0 || jobs["pending"] != 1.0 {
		t.Errorf("busiest tenant = %s", r.raw)
	}
	q := h.do("GET", "/v1/tenants?order=name", "", "").body["tenants"].([]any)[2].(map[string]any)
	if q["own"].(map[string]any)["limit"] != 4.0 || q["effective"].(map[string]any)["limit"] != 4.0 {
		t.Errorf("tenant with settings only = %v", q)
	}
	for _, bad := range []string{"order=loudest", "limit=0", "limit=x", "cursor=nope"} {
		if r := h.do("GET", "/v1/tenants?"+bad, "", ""); r.status != 400 {
			t.Errorf("GET /v1/tenants?%s: %d %s, want 400", bad, r.status, r.raw)
		}
	}
}
