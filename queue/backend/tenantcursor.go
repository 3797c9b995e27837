package backend

import (
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// TenantCursor is a position in a tenant listing (queuetype.TenantFilter's
// Cursor) that is sorted by name, or busiest first: most active jobs,
// then largest backlog, then name. A store that sorts its rows that way
// selects those after the cursor: by name, Tenant > cursor's; busiest
// first, (Active, Backlog) below the cursor's or equal with a later name.
type TenantCursor struct {
	Busiest         bool
	Active, Backlog int64
	Tenant          string
}

// NextTenantCursor is the cursor after info in a listing of the given
// order: "n:<name>" by name, "b:<active>:<backlog>:<name>" busiest first.
func NextTenantCursor(info *queuetype.TenantInfo, busiest bool) string {
	if !busiest {
		return "n:" + info.Tenant
	}
	return "b:" + strconv.FormatInt(info.Active, 10) + ":" + strconv.FormatInt(info.Backlog(), 10) + ":" + info.Tenant
}

// ParseTenantCursor reads a cursor NextTenantCursor made for the same
// order. The empty cursor is the start of the listing (ok is false). A
// cursor of the other order, or not one at all, is an invalid argument
// naming TenantFilter.Cursor.
func ParseTenantCursor(c string, busiest bool) (cur TenantCursor, ok bool, err error) {
	if c == "" {
		return TenantCursor{}, false, nil
	}
	bad := InvalidArgument(queuetype.Field("TenantFilter", "Cursor"), "is not a cursor of this order from this backend: %q", c)
	if !busiest {
		name, found := strings.CutPrefix(c, "n:")
		if !found {
			return TenantCursor{}, false, bad
		}
		return TenantCursor{Tenant: name}, true, nil
	}
	parts := strings.SplitN(c, ":", 4)
	if len(parts) != 4 || parts[0] != "b" {
		return TenantCursor{}, false, bad
	}
	active, err1 := strconv.ParseInt(parts[1], 10, 64)
	backlog, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return TenantCursor{}, false, bad
	}
	return TenantCursor{Busiest: true, Active: active, Backlog: backlog, Tenant: parts[3]}, true, nil
}
