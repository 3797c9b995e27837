package server

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/sluicehq/sluice/queue"
)

// The queue package names a bad field in parts (queue.FieldPath: the
// argument's Go type and field, and its place in a batch); the API names it
// as its clients write it. For the bodies, the name is the JSON name of
// the body's field that carries the value, found once from the body types
// themselves, so it cannot drift from what clients send: the body field of
// the same Go name, or of that name with "MS" for a duration in
// milliseconds. The listings take query parameters instead.

// apiFields maps (queue type, Go field) to the API's name.
var apiFields = func() map[[2]string]string {
	m := map[[2]string]string{
		{"ListFilter", "States"}: "state", {"", "specs"}: "jobs",
	}
	for _, f := range []string{"Queue", "Tenant", "Kind", "Group", "Order", "Cursor", "Limit"} {
		m[[2]string{"ListFilter", f}] = strings.ToLower(f)
	}
	for _, f := range []string{"Order", "Cursor", "Limit"} {
		m[[2]string{"TenantFilter", f}] = strings.ToLower(f)
	}
	bodies := []struct {
		of   any
		body any
	}{
		{queue.JobSpec{}, jobSpecBody{}},
		{queue.GroupSpec{}, groupSpecBody{}},
		{queue.TenantConfig{}, tenantSettings{}},
	}
	for _, b := range bodies {
		for name, api := range bodyNames(reflect.TypeOf(b.of), reflect.TypeOf(b.body)) {
			m[[2]string{reflect.TypeOf(b.of).Name(), name}] = api
		}
	}
	return m
}()

// bodyNames maps each field of typ that body carries to its JSON name.
func bodyNames(typ, body reflect.Type) map[string]string {
	out := map[string]string{}
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		for _, bf := range []string{name, name + "MS"} {
			if f, ok := body.FieldByName(bf); ok {
				out[name] = strings.Split(f.Tag.Get("json"), ",")[0]
				break
			}
		}
	}
	return out
}

// apiField names the field at p as the API does: jobs[3].unique_key for
// specs[3].JobSpec.UniqueKey. A parameter (no type) keeps its name, which
// is the API's too (tenant, group, id); so does a field the API does not
// take, which no request can get wrong.
func apiField(p queue.FieldPath) string {
	name := p.Name
	if api, ok := apiFields[[2]string{p.Type, p.Name}]; ok {
		name = api
	} else if p.Type != "" {
		name = p.String()
	}
	if p.Batch == "specs" {
		return fmt.Sprintf("jobs[%d].%s", p.Index, name)
	}
	return name
}

// asField names the field from of a refused argument as the API field to,
// for a handler whose request carries that value under its own name (the
// path's {queue} for a queue scope's name, concurrency for a tenant's
// limit). Any other error is returned as it is.
func asField(err error, from queue.FieldPath, to string) error {
	var ia *queue.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Path != from {
		return err
	}
	p := queue.Field("", to)
	return &queue.InvalidArgumentError{Field: p.String(), Rule: ia.Rule, Path: p}
}
