package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/config"
)

// DefaultConfigFile is read by sluice serve when --config is not given and
// the file exists.
const DefaultConfigFile = "sluice.yaml"

type serveFlags struct {
	config, listen, grpc, redisURL, postgresURL, redisMode, dataDir, logFormat, logLevel string
}

func newServe() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve rate limits and jobs over HTTP (and Envoy's rate-limit gRPC API)",
		Long: `Serve rate limits and jobs over HTTP on 127.0.0.1:8080.

The config is --config FILE, else ./sluice.yaml when it exists, else the
built-in example (FastGPT's scenes, see sluice.example.yaml). The config
file is watched: a valid change applies at once, an invalid one is logged
and ignored. Counters stay in process and jobs in an SQLite file under
./sluice-data unless --redis-url (or storage.redis_url) names a Redis
or --postgres-url (storage.postgres_url) a PostgreSQL for the jobs;
queues.backends may place queues elsewhere, such as on the RabbitMQ lane
(queues.rabbitmq.url), and the server then serves them all alike.

Each setting is taken from its flag, else its environment variable, else
the file, else the default: SLUICE_LISTEN, SLUICE_GRPC, SLUICE_REDIS_URL,
SLUICE_REDIS_MODE, SLUICE_POSTGRES_URL, SLUICE_DATA_DIR, SLUICE_AMQP_URL
(queues.rabbitmq.url), SLUICE_LOG_FORMAT, SLUICE_LOG_LEVEL,
SLUICE_METRICS_TOKEN (metrics.token), and the tokens SLUICE_ADMIN_TOKEN
(named ops, role admin), SLUICE_API_TOKEN (api: limiter, producer) and
SLUICE_WORKER_TOKEN (workers: worker), which replace the file's token of
that name or are added. The start log says where each came from.
SIGINT or SIGTERM shuts down gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "config file (default ./sluice.yaml if present, else the built-in example)")
	fl.StringVar(&f.listen, "listen", "", "HTTP address, over $SLUICE_LISTEN and server.listen (default 127.0.0.1:8080)")
	fl.StringVar(&f.grpc, "grpc", "", "Envoy rate-limit gRPC address, over $SLUICE_GRPC and server.grpc (default off)")
	fl.StringVar(&f.redisURL, "redis-url", "", "Redis URL, over $SLUICE_REDIS_URL and storage.redis_url: counters (and jobs) on Redis")
	fl.StringVar(&f.postgresURL, "postgres-url", "", "PostgreSQL URL, over $SLUICE_POSTGRES_URL and storage.postgres_url: jobs in Postgres")
	fl.StringVar(&f.redisMode, "redis-mode", "", "single, cluster or sentinel, over $SLUICE_REDIS_MODE and storage.redis_mode (default single)")
	fl.StringVar(&f.dataDir, "data-dir", "", "embedded data directory, over $SLUICE_DATA_DIR and storage.data_dir (default ./sluice-data)")
	fl.StringVar(&f.logFormat, "log-format", "", "text or json, over $SLUICE_LOG_FORMAT and server.log_format")
	fl.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error, over $SLUICE_LOG_LEVEL and server.log_level")
	return cmd
}

func serve(ctx context.Context, f *serveFlags, stdout, stderr io.Writer) error {
	cfg, path, origins, err := resolveServeConfig(f, os.LookupEnv)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, cfg.Server.LogFormat, cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	if path == "" {
		log.Info("sluice: no config file: using the built-in example scenes (see sluice.example.yaml)")
	} else {
		log.Info("sluice: config loaded", "file", path)
	}
	logOrigins(log, cfg, origins)
	return server.Run(ctx, server.RunOptions{
		Config: cfg, ConfigPath: path, Logger: log,
		Overrides: func(next *config.Config) { config.ApplyServeOverrides(next, f.values(), os.LookupEnv) },
		Listening: func(addr, grpcAddr string) {
			fmt.Fprintf(stdout, "sluice listening on http://%s\n", addr)
			if grpcAddr != "" {
				fmt.Fprintf(stdout, "sluice rate-limit gRPC on %s\n", grpcAddr)
			}
		},
	})
}

// resolveServeConfig loads the config (see loadServeConfig) and lays the
// environment (lookup) and then the flags over it: flag > environment >
// file > default. It returns where each setting came from.
func resolveServeConfig(f *serveFlags, lookup func(string) (string, bool)) (*config.Config, string, []config.Origin, error) {
	cfg, path, err := loadServeConfig(f.config)
	if err != nil {
		return nil, "", nil, err
	}
	origins := config.ApplyServeOverrides(cfg, f.values(), lookup)
	if err := cfg.Validate(); err != nil {
		return nil, "", nil, fmt.Errorf("flags and environment: %w", err)
	}
	return cfg, path, origins, nil
}

// logOrigins writes one line saying where the jobs are kept and where each
// setting came from, secrets left out.
func logOrigins(log *slog.Logger, cfg *config.Config, origins []config.Origin) {
	args := []any{"storage", config.StorageOrigin(cfg, origins)}
	for _, o := range origins {
		args = append(args, o.Key, o.Value+" (from "+o.From+")")
	}
	log.Info("sluice: settings (flag > environment > file > default)", args...)
}

// loadServeConfig returns the config and the path to watch ("" for the
// built-in example).
func loadServeConfig(path string) (*config.Config, string, error) {
	if path == "" {
		if _, err := os.Stat(DefaultConfigFile); err == nil {
			path = DefaultConfigFile
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", err
		}
	}
	if path == "" {
		cfg, err := config.LoadExample()
		return cfg, "", err
	}
	cfg, err := config.Load(path)
	return cfg, path, err
}

// values returns the flags given, by name (config.ServeSetting.Flag).
func (f *serveFlags) values() map[string]string {
	return map[string]string{
		"listen": f.listen, "grpc": f.grpc, "redis-url": f.redisURL, "postgres-url": f.postgresURL,
		"redis-mode": f.redisMode, "data-dir": f.dataDir, "log-format": f.logFormat, "log-level": f.logLevel,
	}
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level must be debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format must be text or json, got %q", format)
}
