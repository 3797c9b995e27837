package main

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// forbiddenDeps are packages only tests need: none may be linked into the
// binary, which would make the first `go run ./cmd/sluice serve` compile
// them for nothing.
var forbiddenDeps = []string{
	"testing",
	"net/http/httptest",
	"github.com/alicebob/miniredis",
	"github.com/yuin/gopher-lua",
	"go.uber.org/goleak",
	"github.com/chromedp",
	"github.com/sluicehq/sluice/internal/testutil",
}

// TestBinaryLinksNoTestCode lists the binary's dependencies: no testing
// package, test helper of ours or of a module (a package named *test, such
// as queuetest) or test-only module among them.
func TestBinaryLinksNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 100 {
		t.Fatalf("go list -deps listed %d packages; want the binary's several hundred:\n%s", len(lines), out)
	}
	for _, l := range lines {
		p, std, _ := strings.Cut(l, " ")
		if testOnly(p, std == "true") {
			t.Errorf("the binary links %s, which only tests need", p)
		}
	}
}

// testOnly reports whether the package at import path p is test code. The
// standard library's internal packages named *test (internal/synctest)
// serve the runtime and do not count.
func testOnly(p string, std bool) bool {
	if !std && strings.HasSuffix(path.Base(p), "test") {
		return true
	}
	for _, f := range forbiddenDeps {
		if p == f || strings.HasPrefix(p, f+"/") {
			return true
		}
	}
	return false
}
