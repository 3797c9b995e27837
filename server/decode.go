package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Every JSON body the API reads goes through decodeJSON (or decodePart for
// an element of one), and every decoding error through jsonProblem: one
// place that speaks of the API's fields and JSON's types, never Go's.

// decodeJSON reads r's body (already bounded by MaxBytesReader) into v,
// strictly: one JSON object, no unknown fields, field names of the exact
// case, and text the API can keep as it was sent (see checkText).
// optional allows an empty body (v keeps its zero value).
func decodeJSON(r *http.Request, v any, optional bool) *problem {
	if p := checkBodyHeaders(r); p != nil {
		return p
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return jsonProblem(err, v, "")
	}
	dec := newDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return jsonProblem(err, v, "")
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		return badRequest("request body must hold exactly one JSON value")
	}
	return checkText(data, v, "")
}

// decodePart decodes data, one element of a body already read (a job of
// a batch), as strictly as decodeJSON, naming its fields under path (such
// as "jobs[3]").
func decodePart(data json.RawMessage, v any, path string) *problem {
	if err := newDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return jsonProblem(err, v, path)
	}
	return checkText(data, v, path)
}

func newDecoder(r io.Reader) *json.Decoder {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec
}

// checkBodyHeaders refuses a body the server would misread: another media
// type, or a compressed one (read as JSON it would fail with a baffling
// syntax error, or worse, not at all).
func checkBodyHeaders(r *http.Request) *problem {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		p := &problem{Status: http.StatusUnsupportedMediaType,
			Detail: fmt.Sprintf("Content-Encoding %q is not supported: send the body uncompressed", clip(ce))}
		p.header("Accept-Encoding", "identity")
		return p
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	// curl -d sends application/x-www-form-urlencoded by default; the body
	// is still read as JSON, so a real form fails with a JSON error that
	// says what is wrong.
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "application/x-www-form-urlencoded") {
		return &problem{Status: http.StatusUnsupportedMediaType, Detail: fmt.Sprintf("Content-Type must be application/json, got %q", clip(ct))}
	}
	return nil
}

// jsonProblem turns a decoding error of v into a problem naming the API
// field (under path, when v is an element of a larger body).
func jsonProblem(err error, v any, path string) *problem {
	var (
		mbe  *http.MaxBytesError
		syn  *json.SyntaxError
		typ  *json.UnmarshalTypeError
		name string
	)
	switch {
	case errors.As(err, &mbe):
		return &problem{Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit)}
	case errors.Is(err, io.EOF) && path == "":
		return badRequest("request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("bad JSON: the body ends in the middle of a value")
	case errors.As(err, &syn):
		return badRequest("bad JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		return typeProblem(typ, v, path)
	}
	if n, _ := fmt.Sscanf(err.Error(), "json: unknown field %q", &name); n == 1 {
		return badRequest("unknown field %q (fields: %s)", clip(joinPath(path, name)), strings.Join(jsonFields(v), ", "))
	}
	return badRequest("bad JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// typeProblem says which JSON type a field needs and what it got.
func typeProblem(typ *json.UnmarshalTypeError, v any, path string) *problem {
	field := joinPath(path, typ.Field)
	got := jsonValue(typ.Value)
	if field == "" {
		return badRequest("request body must be %s, got %s", jsonType(typ.Type), got)
	}
	if ft := fieldType(v, typ.Field); ft != nil && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) && ft.Elem() == typ.Type {
		return badRequest("every item of %s must be %s, got %s", field, jsonType(typ.Type), got)
	}
	num, isNum := strings.CutPrefix(typ.Value, "number ")
	if !isNum || !isInteger(typ.Type.Kind()) {
		return badRequest("%s must be %s, got %s", field, jsonType(typ.Type), got)
	}
	f, _, err := big.ParseFloat(num, 10, 256, big.ToNearestEven)
	switch {
	case err != nil || !f.IsInt():
		return badRequest("%s must be an integer, got %s", field, clip(num))
	case fitsInt64(f): // such as 1e3 or 5.0, which encoding/json does not take
		return badRequest("%s must be a plain integer (no fraction or exponent), got %s", field, clip(num))
	}
	if b, ok := fieldBounds[leaf(typ.Field)]; ok {
		return badRequest("%s %s, got %s", field, b.rule(), clip(num))
	}
	return badRequest("%s is out of range, got %s", field, clip(num))
}

// intBound is the range of an integer field of the API.
type intBound struct {
	min, max int64
	note     string // said after the range, such as " (100 years)"
}

func (b intBound) rule() string {
	return fmt.Sprintf("must be between %d and %d%s", b.min, b.max, b.note)
}

// check returns a problem naming field when n is out of bounds.
func (b intBound) check(field string, n int64) *problem {
	if n < b.min || n > b.max {
		return badRequest("%s %s, got %d", field, b.rule(), n)
	}
	return nil
}

func joinPath(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

func leaf(field string) string {
	return field[strings.LastIndexByte(field, '.')+1:]
}

func isInteger(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func fitsInt64(f *big.Float) bool {
	_, acc := f.Int64()
	return acc == big.Exact
}

// jsonType names the JSON type a Go type is decoded from.
func jsonType(t reflect.Type) string {
	switch k := t.Kind(); {
	case isInteger(k):
		return "an integer"
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "true or false"
	case k == reflect.Slice || k == reflect.Array:
		return "an array"
	case k == reflect.Map || k == reflect.Struct:
		return "an object"
	case k == reflect.Pointer:
		return jsonType(t.Elem())
	}
	return "another JSON type"
}

// jsonValue names the JSON value the decoder met, from
// UnmarshalTypeError.Value ("string", "number 1.5", ...).
func jsonValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return clip(n)
	}
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return clip(v)
}

// fieldType is the Go type of the field at a dotted JSON path in v, or
// nil when v has none.
func fieldType(v any, path string) reflect.Type {
	t := reflect.TypeOf(v)
	for _, name := range strings.Split(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := structField(t, name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

func structField(t reflect.Type, name string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(t) {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonFields lists the JSON names of v's fields, for an unknown field's
// problem.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" && f.IsExported() {
			out = append(out, tag)
		}
	}
	return out
}

// maxEcho bounds how much of a caller's input a problem repeats.
const maxEcho = 100

// clip cuts s to at most maxEcho bytes, on a character boundary, marking
// the cut: a problem repeats what was wrong, not a caller's megabyte.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
