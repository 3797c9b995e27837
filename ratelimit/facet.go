package ratelimit

// Wrapper is a Store that adds behaviour around another (TraceStore's
// tracing, say) and hands back the one it wraps, so the optional parts of
// the store beneath (Acquirer, Reserver, PartialConsumer, Resetter,
// OverrideStore, Admitter) stay reachable through the wrapper.
type Wrapper interface {
	Store
	// Unwrap returns the store this one wraps.
	Unwrap() Store
}

// Facet returns s as T, looking through wrappers (Wrapper) until a store
// implements T; ok is false when none does. Optional store parts are
// found this way, so wrapping a store never hides what it can do.
func Facet[T any](s Store) (t T, ok bool) {
	for s != nil {
		if t, ok = s.(T); ok {
			return t, true
		}
		w, isWrapper := s.(Wrapper)
		if !isWrapper {
			break
		}
		s = w.Unwrap()
	}
	return t, false
}
