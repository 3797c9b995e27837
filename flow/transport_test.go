package flow_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
)

// script is an upstream that answers the n-th request (0-based) with
// statuses[n] (the last one repeating), recording request bodies.
type script struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header // sent with every non-200 answer
	bodies   []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	status := s.statuses[min(n, len(s.statuses)-1)]
	s.mu.Unlock()
	if status != http.StatusOK {
		for k, v := range s.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "answer %d", n+1)
}

func (s *script) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// roundTrip sends req through rt on a goroutine, advancing fc through every
// retry wait the transport announces.
func roundTrip(t *testing.T, fc *clock.Fake, rt http.RoundTripper, req *http.Request, log *waitLog) (*http.Response, error) {
	t.Helper()
	type out struct {
		resp *http.Response
		err  error
	}
	done := make(chan out, 1)
	go func() {
		resp, err := rt.RoundTrip(req)
		done <- out{resp, err}
	}()
	for {
		w := waiting(fc)
		select {
		case o := <-done:
			tm := fc.NewTimer(time.Hour)
			<-w
			tm.Stop()
			return o.resp, o.err
		case <-w:
			fc.Advance(log.last())
		}
	}
}

func newTransport(fc *clock.Fake, log *waitLog, base http.RoundTripper, opts ...flow.TransportOption) http.RoundTripper {
	p := flow.Policy{Clock: fc, OnRetry: log.record, Jitter: -1}
	return flow.Transport(base, append([]flow.TransportOption{flow.WithRetry(p)}, opts...)...)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTransportRetriesByStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		statuses   []int
		retryAfter string
		wantStatus int
		wantCalls  int
		wantWaits  []time.Duration
	}{
		{"429 waits Retry-After then 200", []int{429, 200}, "7", 200, 2, []time.Duration{7 * time.Second}},
		{"503 without Retry-After backs off", []int{503, 503, 200}, "", 200, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"503 until attempts run out returns the last 503", []int{503}, "", 503, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"HTTP-date Retry-After", []int{429, 200}, epoch.Add(90 * time.Second).Format(http.TimeFormat), 200, 2, []time.Duration{90 * time.Second}},
		{"404 is permanent", []int{404, 200}, "", 404, 1, nil},
		{"400 is permanent", []int{400, 200}, "", 400, 1, nil},
		{"500 is returned as is", []int{500, 200}, "", 500, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := &script{statuses: tt.statuses, header: http.Header{}}
			if tt.retryAfter != "" {
				up.header.Set("Retry-After", tt.retryAfter)
			}
			srv := httptest.NewServer(up)
			defer srv.Close()
			fc, log := clock.NewFake(epoch), &waitLog{}
			rt := newTransport(fc, log, srv.Client().Transport)
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := roundTrip(t, fc, rt, req, log)
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(t, resp)
			if resp.StatusCode != tt.wantStatus || up.calls() != tt.wantCalls || !equalDurations(log.all(), tt.wantWaits) {
				t.Fatalf("status %d after %d calls, waits %v; want %d after %d, waits %v",
					resp.StatusCode, up.calls(), log.all(), tt.wantStatus, tt.wantCalls, tt.wantWaits)
			}
			if want := fmt.Sprintf("answer %d", tt.wantCalls); body != want {
				t.Errorf("body %q, want the last answer %q", body, want)
			}
		})
	}
}

func TestTransportReplaysBodies(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{503, 429, 200}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	rt := newTransport(fc, log, srv.Client().Transport)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"event":"paid"}`))
	resp, err := roundTrip(t, fc, rt, req, log)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("resp %v, err %v", resp, err)
	}
	readBody(t, resp)
	for i, b := range up.bodies {
		if b != `{"event":"paid"}` {
			t.Errorf("attempt %d sent body %q, want the original", i+1, b)
		}
	}
	if len(up.bodies) != 3 {
		t.Errorf("%d attempts, want 3", len(up.bodies))
	}
}

// onceReader is a body http.NewRequest cannot rewind (no GetBody).
type onceReader struct{ io.Reader }

func TestTransportSendsUnreplayableBodyOnce(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{503, 200}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	rt := newTransport(fc, log, srv.Client().Transport)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, onceReader{strings.NewReader("stream")})
	resp, err := roundTrip(t, fc, rt, req, log)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 503 || up.calls() != 1 {
		t.Fatalf("status %d after %d calls; want the 503 after 1 (the body cannot be sent twice)", resp.StatusCode, up.calls())
	}
}

func TestTransportRetriesConnectionErrors(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here any more: connection refused
	fc, log := clock.NewFake(epoch), &waitLog{}
	rt := newTransport(fc, log, &http.Transport{})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	_, err = roundTrip(t, fc, rt, req, log)
	if !errors.Is(err, syscall.ECONNREFUSED) || len(log.all()) != 2 {
		t.Fatalf("error %v after %d retries; want connection refused after 2", err, len(log.all()))
	}
}

// flakyBase fails the first request with a timeout, then delegates.
type flakyBase struct {
	once sync.Once
	next http.RoundTripper
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func (f *flakyBase) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	f.once.Do(func() { err = &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}} })
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return f.next.RoundTrip(req)
}

func TestTransportRetriesTimeouts(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{200}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	rt := newTransport(fc, log, &flakyBase{next: srv.Client().Transport})
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := roundTrip(t, fc, rt, req, log)
	if err != nil || resp.StatusCode != 200 || up.calls() != 1 || len(log.all()) != 1 {
		t.Fatalf("resp %v, err %v, %d calls, %d retries; want 200 after one retry", resp, err, up.calls(), len(log.all()))
	}
	readBody(t, resp)
}

func TestTransportCertificateErrorsArePermanent(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{200}}
	srv := httptest.NewUnstartedServer(up)
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	base := &http.Transport{} // does not trust the test server's certificate
	defer base.CloseIdleConnections()
	rt := newTransport(fc, log, base)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := roundTrip(t, fc, rt, req, log)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || len(log.all()) != 0 {
		t.Fatalf("error %v after %d retries; want an unknown-authority error and no retry", err, len(log.all()))
	}
}

func TestTransportBudgets(t *testing.T) {
	t.Parallel()
	a, b := &script{statuses: []int{200}}, &script{statuses: []int{200}}
	srvA, srvB := httptest.NewServer(a), httptest.NewServer(b)
	defer srvA.Close()
	defer srvB.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	hosts, err := flow.NewHostBudgets(1, time.Hour, flow.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	rt := newTransport(fc, log, srvA.Client().Transport, flow.WithHostBudgets(hosts.For))
	get := func(url string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			readBody(t, resp)
		}
		return err
	}
	if err := get(srvA.URL); err != nil {
		t.Fatal(err)
	}
	if err := get(srvB.URL); err != nil {
		t.Fatalf("host B has its own budget: %v", err)
	}
	if err := get(srvA.URL); !errors.Is(err, flow.ErrWouldExceedDeadline) {
		t.Fatalf("second call to host A within the hour: %v, want ErrWouldExceedDeadline", err)
	}
	if a.calls() != 1 || b.calls() != 1 {
		t.Fatalf("calls A %d, B %d; want 1 each", a.calls(), b.calls())
	}
}

// TestTransportRetriesCostBudget: a budget of 2 per hour allows the first
// attempt and one retry; the third attempt cannot get a call before the
// deadline, so the caller gets the upstream's last answer.
func TestTransportRetriesCostBudget(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{503}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	budget, err := flow.NewBudget(2, time.Hour, flow.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	rt := newTransport(fc, log, srv.Client().Transport, flow.WithBudget(budget))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := roundTrip(t, fc, rt, req, log)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != 503 || up.calls() != 2 {
		t.Fatalf("status %d after %d calls; want 503 after 2", resp.StatusCode, up.calls())
	}
}

func TestTransportCancelledRequest(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{503}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	fc, log := clock.NewFake(epoch), &waitLog{}
	rt := newTransport(fc, log, srv.Client().Transport)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	done := make(chan error, 1)
	go func() {
		_, err := rt.RoundTrip(req)
		done <- err
	}()
	fc.BlockUntil(1) // sleeping before the retry
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	resp := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	tests := []struct {
		name string
		resp *http.Response
		err  error
		want flow.Class
	}{
		{"200", resp(200), nil, flow.Done},
		{"404", resp(404), nil, flow.Done},
		{"429", resp(429), nil, flow.Transient},
		{"502", resp(502), nil, flow.Transient},
		{"503", resp(503), nil, flow.Transient},
		{"504", resp(504), nil, flow.Transient},
		{"timeout", nil, &net.OpError{Op: "read", Err: timeoutErr{}}, flow.Transient},
		{"refused", nil, fmt.Errorf("dial: %w", syscall.ECONNREFUSED), flow.Transient},
		{"reset", nil, fmt.Errorf("read: %w", syscall.ECONNRESET), flow.Transient},
		{"eof", nil, io.ErrUnexpectedEOF, flow.Transient},
		{"unknown authority", nil, x509.UnknownAuthorityError{}, flow.Fatal},
		{"hostname", nil, x509.HostnameError{}, flow.Fatal},
		{"no such host", nil, &net.DNSError{Err: "no such host", IsNotFound: true}, flow.Fatal},
		{"other", nil, errors.New("unsupported protocol scheme"), flow.Fatal},
	}
	for _, tt := range tests {
		if got := flow.Classify(tt.resp, tt.err); got != tt.want {
			t.Errorf("Classify(%s) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestTransportKeepsTheLastBodyWhole: retryable answers are buffered while
// the transport sleeps; the one handed to the caller must still be whole,
// short or long.
func TestTransportKeepsTheLastBodyWhole(t *testing.T) {
	t.Parallel()
	for _, size := range []int{10, 64 << 10, 200 << 10} {
		body := strings.Repeat("x", size)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, body)
		}))
		fc, log := clock.NewFake(epoch), &waitLog{}
		rt := newTransport(fc, log, srv.Client().Transport)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := roundTrip(t, fc, rt, req, log)
		if err != nil {
			t.Fatal(err)
		}
		if got := readBody(t, resp); got != body {
			t.Errorf("%d-byte body came back as %d bytes", size, len(got))
		}
		srv.Close()
	}
}
