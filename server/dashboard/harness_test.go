package dashboard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	srvconfig "github.com/sluicehq/sluice/server/config"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testutil"
)

// The browser tests build the real sluice binary, start it on a free port
// with a temporary data directory, and drive Debian's Chromium through the
// DevTools protocol, as an operator's browser would.

const chromiumPath = "/usr/bin/chromium"

var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// needBrowser skips the test when Chromium is not installed: `go test
// ./...` must pass on a fresh machine; .ci/setup-browser.sh installs it
// for CI. Where it is installed, the default run drives one browser test
// (TestBrowser: sign-in, overview, limits); the others, a minute more on
// a 2-core machine, run with the full matrix (SLUICE_TEST_FULL=1).
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: %s is missing (apt-get install chromium, or source .ci/setup-browser.sh)", chromiumPath)
	}
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	if t.Name() != "TestBrowser" {
		testutil.NeedFull(t, "this browser test")
	}
}

func sluiceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		defer func() { t.Logf("go build: %v", time.Since(start).Round(time.Millisecond)) }()
		buildDir, buildErr = os.MkdirTemp("", "sluice-dashboard-")
		if buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "sluice")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// instance is a running `sluice serve`.
type instance struct {
	t     *testing.T
	url   string
	token string
	cmd   *exec.Cmd
	logs  *lockedBuffer
	done  chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startSluice runs the binary with config (none: the built-in example)
// in a fresh directory and waits for its "listening" line. Extra
// arguments go to `sluice serve`.
func startSluice(t *testing.T, config, token string, extra ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}
	args = append(args, extra...)
	if config != "" {
		path := filepath.Join(dir, "sluice.yaml")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	cmd := exec.Command(sluiceBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = srvconfig.WithoutServeEnv(os.Environ())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, token: token, cmd: cmd, logs: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = in.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "sluice listening on "); ok {
				urls <- u
			}
		}
	}()
	go func() { in.done <- cmd.Wait() }()
	t.Cleanup(in.stop)
	start := time.Now()
	select {
	case in.url = <-urls:
	case err := <-in.done:
		in.done <- err
		t.Fatalf("sluice exited before listening: %v\n%s", err, in.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("sluice did not start:\n%s", in.logs)
	}
	t.Logf("sluice listening on %s after %v", in.url, time.Since(start).Round(time.Millisecond))
	return in
}

func (in *instance) stop() {
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(15 * time.Second):
		_ = in.cmd.Process.Kill()
		<-in.done
	}
}

// call sends a JSON request to the API and decodes the answer.
func (in *instance) call(method, path string, body any) (int, map[string]any) {
	in.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			in.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, in.url+path, rd)
	if err != nil {
		in.t.Fatal(err)
	}
	if in.token != "" {
		req.Header.Set("Authorization", "Bearer "+in.token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// enqueue adds n jobs and returns their ids.
func (in *instance) enqueue(queue, tenant, group string, n int) []string {
	in.t.Helper()
	jobs := make([]map[string]any, n)
	for i := range jobs {
		jobs[i] = map[string]any{"queue": queue, "kind": "send", "tenant": tenant, "group": group,
			"payload": map[string]any{"to": fmt.Sprintf("%s-%d@example.com", tenant, i), "template": "welcome"}}
	}
	status, out := in.call("POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
	if status != http.StatusCreated {
		in.t.Fatalf("enqueue: %d %v", status, out)
	}
	var ids []string
	for _, e := range out["jobs"].([]any) {
		ids = append(ids, e.(map[string]any)["job"].(map[string]any)["id"].(string))
	}
	return ids
}

// browser starts a headless Chromium with a fresh profile and returns a
// tab's context. The flags keep it from reaching out to the network on
// its own, which a closed network refuses.
func browser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return ctx
}

// pageErrors collects uncaught exceptions and console errors (a blocked
// script or style shows up there too, as a CSP violation). Failed
// requests are left out: the dashboard meets 401, 429 and 501 on purpose.
func pageErrors(ctx context.Context) func() []string {
	var (
		mu   sync.Mutex
		errs []string
	)
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// do runs steps, failing the test with what the page shows when one fails.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	start := time.Now()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, pageText(ctx))
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

func pageText(ctx context.Context) string {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// waitText waits until the element sel has exactly the text want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.trim() === %s; })()`, jsString(sel), jsString(want)))
}

// waitContains waits until the element sel's text contains want.
func waitContains(sel, want string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`, jsString(sel), jsString(want)))
}

// clickLive clicks the element sel inside the page, in the same script
// that finds it. Tables the dashboard re-renders on every refresh replace
// their nodes; chromedp.Click finds a node and then clicks it in a second
// call, which fails with "Could not find node with given id" when a
// refresh lands in between. A dispatched event rather than e.click(), which
// SVG elements (the flow graph's links) do not have.
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window})); return true; })()`, jsString(sel)))
}

func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
