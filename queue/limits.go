package queue

// Default and maximum page sizes for List.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// DefaultMaxStalls is how many expired leases a job survives before it fails.
const DefaultMaxStalls = 10
