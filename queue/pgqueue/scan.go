package pgqueue

import (
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// jobColNames lists the columns sqlstore.ScanJob reads, in order.
var jobColNames = sqlstore.JobColumns

// jobCols is jobColNames for a select list, each prefixed with alias and
// a dot when alias is not empty.
func jobCols(alias string) string { return sqlstore.JobCols(alias) }

// scanner is a row of pgx or of database/sql.
type scanner = sqlstore.Row
