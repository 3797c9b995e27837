package server

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// The document and the route table must agree both ways, and every
// documented operation must reach its handler (not the 404/405 fallback).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := h.do("GET", "/v1/openapi.json", "", "")
	if err := json.Unmarshal([]byte(r.raw), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("document: %v %q", err, doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	routes := map[string]bool{}
	for _, rt := range h.srv.routeTable() {
		routes[rt.method+" "+rt.path] = true
	}
	for _, k := range sortedKeys(routes) {
		if !documented[k] {
			t.Errorf("route %s is not documented", k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !routes[k] {
			t.Errorf("documented %s is not a route", k)
			continue
		}
		method, path, _ := strings.Cut(k, " ")
		path = strings.NewReplacer("{scene}", "member", "{policy}", "chat", "{id}", "x", "{tenant}", "t", "{group}", "g", "{queue}", "q", "{subscription}", "s").Replace(path)
		got := h.do(method, path, "", "")
		if got.status == 405 || (got.status == 404 && strings.HasPrefix(got.body["detail"].(string), "no route")) {
			t.Errorf("%s answered by the fallback: %d %s", k, got.status, got.raw)
		}
	}
}

// Every $ref must point at something in the document.
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				var node any = doc
				for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, _ := node.(map[string]any)
					node = m[seg]
				}
				if node == nil {
					t.Errorf("$ref %s resolves to nothing", ref)
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
