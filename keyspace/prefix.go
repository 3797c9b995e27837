package keyspace

import "strings"

// Prefix is the deployment prefix that turns logical keys into physical
// Redis keys, such as "sluice:". The zero value is not valid; use a prefix
// that ends in ':'.
type Prefix string

// DefaultPrefix is the prefix Sluice's Redis stores use unless told otherwise.
const DefaultPrefix Prefix = "sluice:"

// Validate reports whether p is a usable prefix: a valid namespace followed by ':'.
func (p Prefix) Validate() error {
	ns, ok := strings.CutSuffix(string(p), ":")
	if !ok || !ValidNamespace(ns) {
		return invalid("prefix %q must be a namespace followed by ':'", string(p))
	}
	return nil
}

// Physical returns the physical key for logical. A logical key that already
// starts with the prefix is rejected: prefixing twice is always a bug.
func (p Prefix) Physical(logical string) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	if logical == "" {
		return "", invalid("logical key is empty")
	}
	if strings.HasPrefix(logical, string(p)) {
		return "", invalid("logical key %q already starts with prefix %q", logical, string(p))
	}
	return string(p) + logical, nil
}

// Logical strips the prefix from a physical key, once. The physical key must
// start with the prefix and what remains must not start with it again.
func (p Prefix) Logical(physical string) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	logical, ok := strings.CutPrefix(physical, string(p))
	if !ok {
		return "", invalid("physical key %q does not start with prefix %q", physical, string(p))
	}
	if logical == "" {
		return "", invalid("physical key %q has nothing after the prefix", physical)
	}
	if strings.HasPrefix(logical, string(p)) {
		return "", invalid("physical key %q carries the prefix twice", physical)
	}
	return logical, nil
}

// ScanPattern returns a SCAN MATCH pattern for every key below logical: the
// physical key with the glob characters * ? [ ] \ escaped, then ":*".
func (p Prefix) ScanPattern(logical string) (string, error) {
	phys, err := p.Physical(logical)
	if err != nil {
		return "", err
	}
	return globEscaper.Replace(phys) + ":*", nil
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
