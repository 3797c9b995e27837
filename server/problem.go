package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// problem is an RFC 9457 problem detail. Every error the API answers is
// one, written as application/problem+json.
type problem struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
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

// decodeJSON reads r's body (already bounded by MaxBytesReader) into v,
// strictly: one JSON object, no unknown fields. optional allows an empty
// body (v keeps its zero value).
func decodeJSON(r *http.Request, v any, optional bool) *problem {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		// curl -d sends application/x-www-form-urlencoded by default; the
		// body is still read as JSON, so a real form fails with a JSON
		// error that says what is wrong.
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "application/x-www-form-urlencoded") {
			return &problem{Status: http.StatusUnsupportedMediaType, Detail: fmt.Sprintf("Content-Type must be application/json, got %q", ct)}
		}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return jsonProblem(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return jsonProblem(err)
		}
		return badRequest("request body must hold exactly one JSON value")
	}
	return nil
}

func jsonProblem(err error) *problem {
	var (
		mbe  *http.MaxBytesError
		syn  *json.SyntaxError
		typ  *json.UnmarshalTypeError
		name string
	)
	switch {
	case errors.As(err, &mbe):
		return &problem{Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("bad JSON: the body ends in the middle of a value")
	case errors.As(err, &syn):
		return badRequest("bad JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("bad JSON: expected %s, got %s", jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return badRequest("field %q must be %s, got %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	if n, _ := fmt.Sscanf(err.Error(), "json: unknown field %q", &name); n == 1 {
		return badRequest("unknown field %q", name)
	}
	return badRequest("bad JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint32", "uint64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct":
		return "an object"
	}
	return k
}
