package sqlitequeue_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sqlitequeue-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), sqlitequeue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	c := queue.NewClient(b)
	j, err := c.Enqueue(context.Background(), queue.JobSpec{Queue: "default", Kind: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	// The schema version grows with every migration, so print only that
	// the file has one.
	fmt.Println(j.State, "schema version >= 1:", sqlitequeue.SchemaVersion() >= 1)
	// Output: pending schema version >= 1: true
}
