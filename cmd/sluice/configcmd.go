package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/server/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with sluice.yaml files"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file and print every problem with its line",
		Long: `Validate a config file. Each problem is printed as FILE:LINE: field: rule.
Exit code 0 when the file is valid, 2 when it has problems, 1 when it
cannot be read. Environment variables named in the file must be set.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkConfig(cmd, args[0])
		},
	})
	return cmd
}

func checkConfig(cmd *cobra.Command, path string) error {
	cfg, err := config.Load(path)
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, p := range cerr.Problems {
			loc := path
			if p.Line > 0 {
				loc = fmt.Sprintf("%s:%d", path, p.Line)
			}
			if p.Path != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s: %s\n", loc, p.Path, p.Message)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", loc, p.Message)
			}
		}
		return &exitError{code: 2, msg: fmt.Sprintf("%s: %d problem(s)", path, len(cerr.Problems))}
	}
	if err != nil {
		return err
	}
	policies := 0
	for _, s := range cfg.Limits.Scenes {
		policies += len(s.Policies)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d scenes, %d policies, %d envoy rules, %d tokens)\n",
		path, len(cfg.Limits.Scenes), policies, len(cfg.Limits.Envoy), len(cfg.Auth.Tokens))
	printQueueSettings(cmd.OutOrStdout(), cfg)
	printTuning(cmd.OutOrStdout(), cfg)
	return nil
}
