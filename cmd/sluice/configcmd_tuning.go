package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/sluicehq/sluice/server/config"
)

// printTuning prints the store and webhook delivery tuning keys cfg sets;
// every key not listed is the library's default.
func printTuning(w io.Writer, cfg *config.Config) {
	s := cfg.Storage
	var parts []string
	for _, c := range []struct {
		key string
		v   any
	}{
		{"sqlite", s.SQLite}, {"memory_limits", s.MemoryLimits}, {"redis_queue", s.RedisQueue},
		{"redis_limits", s.RedisLimits}, {"redis_breaker", s.RedisBreaker}, {"postgres", s.Postgres},
	} {
		if set := setKeys(c.v); len(set) > 0 {
			parts = append(parts, c.key+" {"+strings.Join(set, ", ")+"}")
		}
	}
	if len(parts) == 0 {
		parts = []string{"library defaults"}
	}
	fmt.Fprintf(w, "  storage tuning: %s\n", strings.Join(parts, "; "))
	if len(cfg.Webhooks.Subscriptions) == 0 {
		return
	}
	set := setKeys(cfg.Webhooks.Delivery)
	if len(set) == 0 {
		set = []string{"library defaults"}
	}
	fmt.Fprintf(w, "  webhook delivery: %s\n", strings.Join(set, ", "))
}

// setKeys lists the non-zero fields of a tuning struct as "key value", by
// their yaml names, nested structs in braces.
func setKeys(v any) []string {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	var out []string
	for i := range rv.NumField() {
		f, fv := rv.Type().Field(i), rv.Field(i)
		if fv.IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch x := fv.Interface().(type) {
		case config.Duration:
			out = append(out, fmt.Sprintf("%s %s", name, x))
		case bool:
			out = append(out, name)
		default:
			if k := fv.Kind(); k == reflect.Struct || k == reflect.Pointer {
				out = append(out, name+" {"+strings.Join(setKeys(fv.Interface()), ", ")+"}")
				continue
			}
			out = append(out, fmt.Sprintf("%s %v", name, x))
		}
	}
	return out
}
