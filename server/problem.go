package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// problem is an RFC 9457 problem detail. Every error the API answers is
// one, written as application/problem+json.
type problem struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// headers are set on the response besides the body's.
	headers http.Header
}

// header sets a response header the problem is answered with.
func (p *problem) header(key, value string) {
	if p.headers == nil {
		p.headers = http.Header{}
	}
	p.headers.Set(key, value)
}

func (p *problem) Error() string { return p.Detail }

func badRequest(format string, args ...any) *problem {
	return &problem{Status: http.StatusBadRequest, Detail: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *problem {
	return &problem{Status: http.StatusNotFound, Detail: fmt.Sprintf(format, args...)}
}

// writeProblem writes p, or body (p with extension members) when given.
func writeProblem(w http.ResponseWriter, p *problem, body any) {
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if body == nil {
		body = p
	}
	for k, v := range p.headers {
		w.Header()[k] = v
	}
	writeJSONType(w, p.Status, "application/problem+json", body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONType(w, status, "application/json", v)
}

func writeJSONType(w http.ResponseWriter, status int, ctype string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, ctype = http.StatusInternalServerError, "application/problem+json"
		data, _ = json.Marshal(problem{Title: "Internal Server Error", Status: status, Detail: "could not encode the response"})
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n')) // a failed write means the client left
}
