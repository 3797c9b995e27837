package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// encoding/json matches field names without regard to case and turns
// invalid UTF-8 and unpaired surrogates (\ud800) into U+FFFD without a
// word. The API does neither: after a body decodes, checkText walks it
// again beside the Go type it was decoded into and refuses
//
//   - a field name that is not exactly a field's JSON name ({"Queue":…});
//   - in any string the API reads into a Go string (names, keys, tokens,
//     URLs, a subject's values; not payloads, results or data, kept as
//     the JSON they are): a NUL (\u0000), which not every store can hold,
//     invalid UTF-8, or an unpaired surrogate, which would reach the store
//     changed;
//   - anywhere in the body, opaque JSON values (payload, result, data)
//     included: invalid UTF-8, which is not JSON.
//
// A field tagged `text:"any"` is free text (a worker's error message): it
// takes any string, made storable by the queue (queue.StorableError), so a
// failure is never refused for the bytes of its message.

// checkText walks data, a JSON value v was decoded from, naming any
// problem's field under path.
func checkText(data []byte, v any, path string) *problem {
	w := &textWalker{b: data}
	return w.value(reflect.TypeOf(v), path, false)
}

// textWalker reads a JSON value known to be well formed (it decoded).
type textWalker struct {
	b []byte
	i int
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func (w *textWalker) value(t reflect.Type, path string, free bool) *problem {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c := w.peek()
	switch {
	case t == nil || t == rawMessageType || opaque(t):
		return w.anyValue(path, false)
	case t.Kind() == reflect.Interface: // decoded as map[string]any, []any, string…
		return w.anyValue(path, true)
	case t.Kind() == reflect.Struct && c == '{':
		return w.object(t, path)
	case t.Kind() == reflect.Map && c == '{':
		return w.mapValue(t.Elem(), path)
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && c == '[':
		return w.array(t.Elem(), path)
	case t.Kind() == reflect.String && c == '"':
		raw := w.str()
		if free {
			return nil
		}
		return rawStringProblem(raw, path)
	}
	w.skip()
	return nil
}

// opaque reports whether t decodes itself (such as time.Time): its JSON
// is only held to be UTF-8.
func opaque(t reflect.Type) bool {
	u := reflect.TypeFor[json.Unmarshaler]()
	return t.Implements(u) || reflect.PointerTo(t).Implements(u)
}

// anyValue walks a value of no fixed type: one decoded into any (its
// strings become Go strings: strict) or kept as raw JSON (its strings
// only have to be UTF-8).
func (w *textWalker) anyValue(path string, strict bool) *problem {
	check := rawStringProblem
	if !strict {
		check = utf8Problem
	}
	switch w.peek() {
	case '{':
		return w.members(path, func(key string, rawKey []byte) *problem {
			at := joinPath(path, key)
			if p := check(rawKey, at); p != nil {
				return p
			}
			return w.anyValue(at, strict)
		})
	case '[':
		return w.items(path, func(at string) *problem { return w.anyValue(at, strict) })
	case '"':
		return check(w.str(), path)
	}
	w.skip()
	return nil
}

func utf8Problem(raw []byte, field string) *problem {
	if !utf8.Valid(raw) {
		return badRequest("%s must be valid UTF-8", orBody(field))
	}
	return nil
}

func (w *textWalker) object(t reflect.Type, path string) *problem {
	fields := fieldsByName(t)
	return w.members(path, func(key string, rawKey []byte) *problem {
		f, ok := fields[key]
		if !ok {
			// encoding/json took it for a field of another case; an
			// unknown name was refused before.
			return badRequest("unknown field %q: field names are case-sensitive (fields: %s)",
				clip(joinPath(path, key)), strings.Join(jsonFields(reflect.New(t).Interface()), ", "))
		}
		return w.value(f.Type, joinPath(path, key), f.Tag.Get("text") == "any")
	})
}

// mapValue walks an object decoded into a map (or into any) whose
// values are of type elem.
func (w *textWalker) mapValue(elem reflect.Type, path string) *problem {
	return w.members(path, func(key string, rawKey []byte) *problem {
		at := joinPath(path, key)
		if p := rawStringProblem(rawKey, at); p != nil {
			return p
		}
		return w.value(elem, at, false)
	})
}

// members walks an object's members, calling fn at each value.
func (w *textWalker) members(path string, fn func(key string, rawKey []byte) *problem) *problem {
	w.i++ // {
	for {
		switch w.peek() {
		case '}':
			w.i++
			return nil
		case ',':
			w.i++
			continue
		}
		rawKey := w.str()
		var key string
		_ = json.Unmarshal(append(append([]byte{'"'}, rawKey...), '"'), &key)
		w.peek()
		w.i++ // :
		if p := fn(key, rawKey); p != nil {
			return p
		}
	}
}

func (w *textWalker) array(elem reflect.Type, path string) *problem {
	if elem.Kind() == reflect.Uint8 {
		return w.anyValue(path, false) // []byte is base64 text
	}
	return w.items(path, func(at string) *problem { return w.value(elem, at, false) })
}

// items walks an array's items, calling fn at each with its path.
func (w *textWalker) items(path string, fn func(at string) *problem) *problem {
	w.i++ // [
	for n := 0; ; {
		switch w.peek() {
		case ']':
			w.i++
			return nil
		case ',':
			w.i++
			continue
		}
		if p := fn(fmt.Sprintf("%s[%d]", path, n)); p != nil {
			return p
		}
		n++
	}
}

// peek skips white space and returns the next byte, 0 at the end.
func (w *textWalker) peek() byte {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
			continue
		}
		return w.b[w.i]
	}
	return 0
}

// str reads the string at w.i and returns its raw text between the quotes.
func (w *textWalker) str() []byte {
	w.peek()
	start := w.i + 1
	for j := start; j < len(w.b); j++ {
		switch w.b[j] {
		case '\\':
			j++
		case '"':
			w.i = j + 1
			return w.b[start:j]
		}
	}
	w.i = len(w.b)
	return w.b[min(start, len(w.b)):]
}

// skip reads past the value at w.i.
func (w *textWalker) skip() {
	depth := 0
	for {
		switch w.peek() {
		case 0:
			return
		case '"':
			w.str()
		case '{', '[':
			depth++
			w.i++
		case '}', ']':
			depth--
			w.i++
		case ',', ':':
			if depth == 0 {
				return
			}
			w.i++
		default: // a number, true, false or null
			for w.i < len(w.b) && !strings.ContainsRune(" \t\r\n,:]}", rune(w.b[w.i])) {
				w.i++
			}
		}
		if depth <= 0 {
			return
		}
	}
}

// rawStringProblem checks the raw text of a JSON string the API reads
// as a Go string: UTF-8, no NUL, no unpaired surrogate.
func rawStringProblem(raw []byte, field string) *problem {
	if !utf8.Valid(raw) {
		return badRequest("%s must be valid UTF-8", orBody(field))
	}
	for j := 0; j < len(raw); j++ {
		if raw[j] != '\\' {
			continue
		}
		if j+1 < len(raw) && raw[j+1] != 'u' {
			j++
			continue
		}
		cp, ok := hex4(raw, j+2)
		switch {
		case !ok:
			j++
		case cp == 0:
			return badRequest("%s must not contain NUL (\\u0000)", orBody(field))
		case cp >= 0xD800 && cp < 0xDC00:
			if lo, ok := hex4(raw, j+8); !ok || j+7 >= len(raw) || raw[j+6] != '\\' || raw[j+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return surrogateProblem(field, cp)
			}
			j += 11
		case cp >= 0xDC00 && cp <= 0xDFFF:
			return surrogateProblem(field, cp)
		default:
			j += 5
		}
	}
	return nil
}

func surrogateProblem(field string, cp rune) *problem {
	return badRequest("%s must not contain an unpaired surrogate (\\u%04x): it is not a character", orBody(field), cp)
}

// hex4 reads the four hex digits at raw[at:], as a \u escape holds.
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func orBody(path string) string {
	if path == "" {
		return "the request body"
	}
	return path
}

// fieldsByName maps the JSON names of t's fields, exactly as encoding/json
// writes them, to the fields.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

func fieldsByName(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || tag == "-":
			continue
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			continue // its fields are promoted
		case tag == "":
			tag = f.Name
		}
		if _, dup := m[tag]; !dup || len(f.Index) == 1 {
			m[tag] = f
		}
	}
	fieldCache.Store(t, m)
	return m
}
