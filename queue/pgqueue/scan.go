package pgqueue

import (
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// scanner is a row of pgx or of database/sql.
type scanner = sqlstore.Row
