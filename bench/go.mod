module github.com/sluicehq/sluice/bench

go 1.26.0

replace github.com/sluicehq/sluice => ../

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/hibiken/asynq v0.26.0
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sluicehq/sluice v0.0.0
	github.com/sourcegraph/conc v0.3.0
	github.com/ulule/limiter/v3 v3.11.2
	golang.org/x/sync v0.25.0
	golang.org/x/time v0.16.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
