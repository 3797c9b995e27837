package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The served document must be valid OpenAPI 3 with zero errors: client
// generators (openapi-typescript for the TypeScript client) read it as is.
// A description holding a comma inside a YAML flow mapping silently
// becomes a truncated value plus a stray key, which this test catches.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.do("GET", "/v1/openapi.json", "", "")
	if r.status != 200 {
		t.Fatalf("GET /v1/openapi.json: %d", r.status)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(r.raw))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Errorf("validate: %v", err)
	}
	var raw any
	if err := json.Unmarshal([]byte(r.raw), &raw); err != nil {
		t.Fatal(err)
	}
	for _, p := range strayKeys(raw, "#") {
		t.Errorf("%s: a key with a null value (a description cut at a comma?)", p)
	}
}

// Every route the server answers is documented, with the same method.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range h.srv.routeTable() {
		item := doc.Paths.Value(rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s %s is answered but not documented", rt.method, rt.path)
		}
	}
}

// strayKeys lists the paths of object members whose value is null: the
// document never means null as a value (it says nullable instead), so
// each is text a flow mapping split off.
func strayKeys(v any, at string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			if v[k] == nil {
				out = append(out, p)
				continue
			}
			out = append(out, strayKeys(v[k], p)...)
		}
	case []any:
		for i, c := range v {
			out = append(out, strayKeys(c, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}
