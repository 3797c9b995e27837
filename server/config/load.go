package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrInvalid is matched by *Error: the file has at least one problem.
var ErrInvalid = errors.New("config: invalid")

// Problem is one thing wrong with a file.
type Problem struct {
	// Line is the 1-based line the problem is on (0 when unknown).
	Line int
	// Path names the field, such as "limits.scenes.member.subject".
	Path string
	// Message says the rule that was broken.
	Message string
}

// String formats p as "line 12: path: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error lists every problem of a file, sorted by line.
type Error struct {
	// File is the file's name, if it came from one.
	File string
	// Problems are sorted by line.
	Problems []Problem
}

// Error lists the problems, one per line after the first.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Load reads and validates the file at path. Problems are returned as one
// *Error listing each with its line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}

// Parse reads and validates a sluice.yaml document; name labels errors.
// Environment variables are read with os.LookupEnv.
func Parse(data []byte, name string) (*Config, error) {
	return ParseEnv(data, name, os.LookupEnv)
}

// ParseEnv is Parse with the environment given by lookup.
func ParseEnv(data []byte, name string, lookup func(string) (string, bool)) (*Config, error) {
	p := &parser{lookup: lookup, lines: map[int][]scalarAt{}}
	cfg := &Config{}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		p.syntax(err)
		return nil, p.result(name)
	}
	if len(root.Content) == 0 {
		cfg.applyDefaults()
		return cfg, nil
	}
	doc := root.Content[0]
	p.expand(doc)
	p.walk(doc, reflect.TypeFor[Config](), "")
	if err := doc.Decode(cfg); err != nil {
		p.decodeErr(err)
	}
	cfg.applyDefaults()
	v := validator{root: doc}
	v.config(cfg)
	p.merge(v.problems)
	if err := p.result(name); err != nil {
		return nil, err
	}
	return cfg, nil
}

type parser struct {
	lookup   func(string) (string, bool)
	problems []Problem
	lines    map[int][]scalarAt // line → scalars on it, for decoder errors
}

func (p *parser) add(line int, path, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: line, Path: path, Message: fmt.Sprintf(format, args...)})
}

// merge adds the validator's problems, except on lines that already have
// one: a value the decoder could not read would only be reported twice.
func (p *parser) merge(more []Problem) {
	bad := map[int]bool{}
	for _, q := range p.problems {
		bad[q.Line] = true
	}
	for _, q := range more {
		if !bad[q.Line] {
			p.problems = append(p.problems, q)
		}
	}
}

func (p *parser) result(name string) error {
	if len(p.problems) == 0 {
		return nil
	}
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
	return &Error{File: name, Problems: p.problems}
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func (p *parser) syntax(err error) {
	msg := err.Error()
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		p.add(n, "", "%s", m[2])
		return
	}
	p.add(0, "", "%s", strings.TrimPrefix(msg, "yaml: "))
}

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${NAME} and ${NAME:-default} in every scalar value (not
// in keys). An unset variable without a default is a problem.
func (p *parser) expand(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.expand(n.Content[i])
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			p.expand(c)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		n.Value = envRE.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRE.FindStringSubmatch(m)
			if v, ok := p.lookup(sub[1]); ok && v != "" {
				return v
			}
			if sub[2] != "" {
				return sub[3]
			}
			p.add(n.Line, "", "environment variable %s is not set", sub[1])
			return ""
		})
		// Let the expanded value resolve as if written plain, so
		// "${PORT}" can fill an integer field.
		n.Tag, n.Style = "", 0
	}
}

// walk reports unknown fields, keyed by the struct's yaml tags, and records
// the path of every line for decoder errors.
func (p *parser) walk(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p.lines[n.Line] = append(p.lines[n.Line], scalarAt{path: path, value: n.Value})
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct && t != reflect.TypeFor[Duration]():
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				p.add(k.Line, join(path, k.Value), "unknown field %q%s", k.Value, suggest(k.Value, fields))
				continue
			}
			p.walk(v, f.Type, join(path, k.Value))
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			p.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			for k, sub := range yamlFields(f.Type) { // an inlined struct's keys are the outer one's
				out[k] = sub
			}
			continue
		}
		if name != "" && name != "-" {
			out[name] = f
		}
	}
	return out
}

// suggest proposes the known field closest to a misspelt one.
func suggest(got string, fields map[string]reflect.StructField) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	names := make([]string, 0, len(fields))
	for name := range fields {
		if norm(name) == norm(got) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

var unmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.+)$")

// decodeErr turns the decoder's collected type errors into problems.
func (p *parser) decodeErr(err error) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		p.syntax(err)
		return
	}
	for _, e := range te.Errors {
		m := lineRE.FindStringSubmatch(e)
		if m == nil {
			p.add(0, "", "%s", e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		p.add(line, p.pathAt(line, m[2]), "%s", typeMessage(m[2]))
	}
}

type scalarAt struct{ path, value string }

// pathAt names the field a decoder error is about: the node on its line
// whose value the message quotes, else the line's deepest node.
func (p *parser) pathAt(line int, msg string) string {
	nodes := p.lines[line]
	if m := unmarshalRE.FindStringSubmatch(msg); m != nil && m[2] != "" {
		for _, n := range nodes {
			if n.value == m[2] {
				return n.path
			}
		}
	}
	if len(nodes) == 0 {
		return ""
	}
	return nodes[len(nodes)-1].path
}

func typeMessage(msg string) string {
	m := unmarshalRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	got := "a " + map[string]string{"seq": "list", "map": "mapping", "str": "string", "int": "number", "float": "number", "bool": "boolean"}[m[1]]
	if m[2] != "" {
		got = strconv.Quote(m[2])
	}
	target := m[3]
	switch {
	case strings.HasPrefix(target, "int") || strings.HasPrefix(target, "uint"):
		return "must be an integer, got " + got
	case target == "bool":
		return "must be true or false, got " + got
	case strings.HasPrefix(target, "[]"):
		return "must be a list, got " + got
	case target == "string" || target == "config.Role":
		return "must be a single value, got " + got
	case strings.HasPrefix(target, "map") || strings.HasPrefix(target, "config."):
		return "must be a mapping, got " + got
	}
	return msg
}

// Marshal writes cfg as YAML (secrets included: for tests and tooling, not
// for logs).
func Marshal(cfg *Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}
