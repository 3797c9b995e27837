package dashboard

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func get(t *testing.T, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	return w
}

// Every file the page or a module refers to is embedded: a typo in an
// import would otherwise only show in a browser.
func TestReferencedFilesExist(t *testing.T) {
	t.Parallel()
	files := Files()
	ref := regexp.MustCompile(`(?:from '\./|src="/ui/|href="/ui/)([a-z0-9.-]+)`)
	for _, name := range files {
		if !strings.HasSuffix(name, ".js") && !strings.HasSuffix(name, ".html") {
			continue
		}
		for _, m := range ref.FindAllStringSubmatch(string(assets()[name].body), -1) {
			if !slices.Contains(files, m[1]) {
				t.Errorf("%s refers to %s, which is not embedded", name, m[1])
			}
		}
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path   string
		status int
		ctype  string
	}{
		{"/", 200, "text/html; charset=utf-8"},
		{"/ui/app.css", 200, "text/css; charset=utf-8"},
		{"/ui/favicon.svg", 200, "image/svg+xml"},
		{"/ui/index.html", 404, "application/problem+json"}, // the page lives at "/" only
		{"/ui/../dashboard.go", 404, "application/problem+json"},
		{"/other", 404, "application/problem+json"},
	}
	for _, tt := range tests {
		w := get(t, tt.path, nil)
		if w.Code != tt.status || w.Header().Get("Content-Type") != tt.ctype {
			t.Errorf("%s: %d %q, want %d %q", tt.path, w.Code, w.Header().Get("Content-Type"), tt.status, tt.ctype)
		}
	}
	first := get(t, "/ui/app.js", nil)
	etag := first.Header().Get("ETag")
	if etag == "" || !strings.Contains(first.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("headers = %v", first.Header())
	}
	if again := get(t, "/ui/app.js", map[string]string{"If-None-Match": etag}); again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Errorf("revalidation: %d with %d bytes, want 304 and none", again.Code, again.Body.Len())
	}
}
