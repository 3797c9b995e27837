// Package dashboard is Sluice's web dashboard: static files embedded in
// the binary (plain HTML, CSS and JavaScript modules, no build step and
// nothing fetched from the internet) and the read models behind the
// endpoints its live views poll.
//
// The dashboard reads and acts through the same HTTP API as every other
// client, with the bearer token an operator types into its login form.
// The package adds what that API lacked for a live view:
//
//   - Activity: per-second rolling counters of rate-limit decisions (per
//     scene and policy) and job starts, ends and start delays (per queue),
//     kept in memory for the last minute;
//   - Breakdowns: job counts by state grouped by tenant, group, kind or
//     queue, from a bounded, cached scan of the job list.
//
// The server mounts Handler at / and /ui/{file}, and serves the read
// models under /v1 (see server/openapi.yaml).
package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// asset is one embedded file with its validator.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

var assets = sync.OnceValue(func() map[string]asset {
	out := map[string]asset{}
	_ = fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		out[strings.TrimPrefix(p, "static/")] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return out
})

// Files lists the embedded file names, as served under /ui/.
func Files() []string {
	var out []string
	for name := range assets() {
		out = append(out, name)
	}
	return out
}

// contentSecurityPolicy allows only the dashboard's own files and API:
// no inline script, no third-party origin, no framing. The token lives in
// sessionStorage, so script injection is what must be ruled out.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the dashboard: index.html at "/", the other files at
// "/ui/<name>". Anything else is a 404 problem. The files need no
// authentication; the data they show comes from the API, with the token.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != "/" {
			var ok bool
			name, ok = strings.CutPrefix(r.URL.Path, "/ui/")
			if !ok || name == "index.html" {
				name = ""
			}
		}
		a, ok := assets()[name]
		if !ok {
			notFound(w, r.URL.Path)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		// Revalidate every time: a new binary must never run old scripts.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(a.body)
	})
}

func notFound(w http.ResponseWriter, p string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	body, _ := json.Marshal(map[string]any{"title": "Not Found", "status": http.StatusNotFound, "detail": "dashboard: no file " + p})
	_, _ = w.Write(append(body, '\n'))
}
