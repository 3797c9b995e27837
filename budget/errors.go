package budget

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/ratelimit"
)

var (
	// ErrInvalidConfig is matched by errors for a budget definition or a
	// claim that cannot be used. They also match
	// ratelimit.ErrInvalidArgument: programmer errors, never masked.
	ErrInvalidConfig = errors.New("budget: invalid configuration")
	// ErrUnknownBudget is matched by errors for a claim, settlement or
	// operation naming a budget that is not defined.
	ErrUnknownBudget = errors.New("budget: unknown budget")
)

// ConfigError names the field and the rule it broke.
type ConfigError struct {
	Field string // such as "Limits.Units[tokens].Quota"
	Rule  string // such as "must be a positive integer, got 0"
}

// Error reads "budget: FIELD RULE".
func (e *ConfigError) Error() string { return "budget: " + e.Field + " " + e.Rule }

// Is makes errors.Is match ErrInvalidConfig and ratelimit.ErrInvalidArgument.
func (e *ConfigError) Is(target error) bool {
	return target == ErrInvalidConfig || target == ratelimit.ErrInvalidArgument
}

func invalid(field, format string, args ...any) error {
	return &ConfigError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

func unknown(name string) error {
	return fmt.Errorf("%w %q", ErrUnknownBudget, name)
}

func asInvalid(err error, target **ratelimit.InvalidArgumentError) bool {
	return errors.As(err, target)
}

// trimField drops the type name ratelimit puts before a field: "Limit.Quota"
// becomes "Quota".
func trimField(f string) string {
	if i := strings.LastIndexByte(f, '.'); i >= 0 {
		return f[i+1:]
	}
	return f
}
