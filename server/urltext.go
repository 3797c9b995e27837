package server

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Names in a URL (a flow's, a schedule's, a tenant's, a queue filter) are
// held to the rule of names in a body: no NUL (%00), valid UTF-8 (a
// percent-encoded surrogate or stray byte is not). They are refused with
// a 400 naming the parameter before any store is asked: a store that
// cannot hold such text must never be asked to look it up.

var wildcard = regexp.MustCompile(`\{([^}.]+)(?:\.\.\.)?\}`)

// pathParams lists the wildcards of a route's path.
func pathParams(path string) []string {
	var out []string
	for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkURLText refuses a path parameter (one of params) or a query
// parameter, name or value, that holds NUL or invalid UTF-8.
func checkURLText(r *http.Request, params []string) *problem {
	for _, name := range params {
		if rule := textRule(r.PathValue(name)); rule != "" {
			return badRequest("%s (in the path) %s", name, rule)
		}
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if rule := textRule(k); rule != "" {
			return badRequest("a query parameter's name %s", rule)
		}
		for _, v := range q[k] {
			if rule := textRule(v); rule != "" {
				return badRequest("%s (in the query) %s", clip(k), rule)
			}
		}
	}
	return nil
}

// textRule is the rule v breaks, "" when none.
func textRule(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "must be valid UTF-8"
	case strings.IndexByte(v, 0) >= 0:
		return "must not contain NUL (%00)"
	}
	return ""
}
