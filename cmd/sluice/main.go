// Command sluice serves Sluice's rate limits and job queue (sluice serve),
// checks config files (sluice config check) and talks to a running server
// (sluice limit, job, queue, tenant, events).
//
// Exit codes: 0 success, 1 error, 2 a rate-limit denial (sluice limit
// consume) or a config with problems (sluice config check).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries a specific exit code; its message, if any, has been
// printed already.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "sluice: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "sluice: "+err.Error())
	return 1
}

// clientFlags are shared by the subcommands that talk to a server.
type clientFlags struct {
	server string
	token  string
	json   bool
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Rate limits and a durable job queue for services in any language",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	cf := &clientFlags{}
	pf := root.PersistentFlags()
	pf.StringVar(&cf.server, "server", envOr("SLUICE_SERVER", "http://127.0.0.1:8080"), "server URL for client commands (env SLUICE_SERVER)")
	// Not defaulted from the environment here: help output would print it.
	pf.StringVar(&cf.token, "token", "", "bearer token for client commands (default $SLUICE_TOKEN)")
	pf.BoolVar(&cf.json, "json", false, "print the server's JSON instead of a summary")
	root.AddCommand(newServe(), newMigrateCmd(), newConfigCmd(), newLimitCmd(cf), newJobCmd(cf), newQueueCmd(cf), newTenantCmd(cf), newGroupCmd(cf), newFlowCmd(cf), newScheduleCmd(cf), newEventsCmd(cf), newBudgetCmd(cf))
	return root
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
