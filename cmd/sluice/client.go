package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// apiError is a problem+json answer from the server.
type apiError struct {
	Status int
	Detail string
	Body   []byte
}

func (e *apiError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Detail, e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, strings.TrimSpace(string(e.Body)))
}

// client calls a running server.
type client struct {
	base  string
	token string
	http  *http.Client
}

func (cf *clientFlags) client() *client {
	token := cf.token
	if token == "" {
		token = os.Getenv("SLUICE_TOKEN")
	}
	return &client{base: strings.TrimRight(cf.server, "/"), token: token, http: &http.Client{Timeout: 90 * time.Second}}
}

// call sends body as JSON (nil for none) and returns the status and raw
// answer. Answers of 400 and above are returned as *apiError, except
// those listed in accept.
func (c *client) call(ctx context.Context, method, path string, body any, accept ...int) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot reach the server at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if resp.StatusCode >= 400 && !contains(accept, resp.StatusCode) {
		e := &apiError{Status: resp.StatusCode, Body: raw}
		var p struct{ Detail string }
		if json.Unmarshal(raw, &p) == nil {
			e.Detail = p.Detail
		}
		return resp.StatusCode, raw, e
	}
	return resp.StatusCode, raw, nil
}

// callJSON is call that decodes the answer into out.
func (c *client) callJSON(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	_, raw, err := c.call(ctx, method, path, body)
	if err != nil {
		return raw, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("unexpected answer from the server: %w", err)
		}
	}
	return raw, nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// printJSON writes raw JSON indented.
func printJSON(w io.Writer, raw []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		w.Write(raw)
		return
	}
	buf.WriteByte('\n')
	w.Write(buf.Bytes())
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
