package backend

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Unsupported returns the *queuetype.UnsupportedError (matching
// queuetype.ErrUnsupported) of a method call that needs feature, which the
// backend named name lacks, such as List on a store that cannot list. A
// backend returns it from a method it has only to satisfy an interface,
// having left the feature out of its Features.
func Unsupported(name string, feature queuetype.Capability) error {
	return &queuetype.UnsupportedError{Backend: name, Feature: feature}
}

// InvalidArgument returns the *queuetype.InvalidArgumentError (matching
// queuetype.ErrInvalidArgument) of an argument that breaks a rule: the field at
// path, such as queuetype.Field("ListFilter", "Cursor"), and the rule, which
// names no other field by its Go name (see queuetype.InvalidArgumentError).
func InvalidArgument(path queuetype.FieldPath, format string, args ...any) error {
	return queuetype.InvalidArgument(path, format, args...)
}

// NodeError is the error of a flow's node i (named name) that a store
// refused while storing the flow: an invalid argument is placed at the
// node's index in the plan (nodes[i]), anything else names the node.
func NodeError(i int, name string, err error) error {
	var ia *queuetype.InvalidArgumentError
	if errors.As(err, &ia) {
		path := ia.Path.At("nodes", i)
		return &queuetype.InvalidArgumentError{Field: path.String(), Rule: ia.Rule, Path: path}
	}
	return fmt.Errorf("node %q: %w", name, err)
}
