package backend

import "github.com/sluicehq/sluice/queue"

// Unsupported returns the *queue.UnsupportedError (matching
// queue.ErrUnsupported) of a method call that needs feature, which the
// backend named name lacks, such as List on a store that cannot list. A
// backend returns it from a method it has only to satisfy an interface,
// having left the feature out of its Features.
func Unsupported(name string, feature queue.Capability) error {
	return &queue.UnsupportedError{Backend: name, Feature: feature}
}
