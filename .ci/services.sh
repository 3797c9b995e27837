# Services for the RabbitMQ lane's tests (queue/amqpqueue), sourced by
# .ci/run: make sure a broker answers on 127.0.0.1:5672 (installing and
# starting it if needed) and point the tests at it.

# amqp_answers opens a connection, sends the AMQP 0-9-1 protocol header and
# checks that the broker replies with a method frame (connection.start).
amqp_answers() {
  timeout 3 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/5672 || exit 1
    printf "AMQP\x00\x00\x09\x01" >&3
    [ "$(head -c 1 <&3 | od -An -tx1 | tr -d " \n")" = "01" ]
  ' 2>/dev/null
}

ensure_rabbitmq() {
  if amqp_answers; then return; fi
  if ! command -v rabbitmq-server >/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server
  fi
  # Installing may have started it already.
  if ! amqp_answers; then
    as_root rabbitmq-server -detached || true
  fi
  for _ in $(seq 300); do
    if amqp_answers; then return; fi
    sleep 0.2
  done
  echo "rabbitmq did not answer on 127.0.0.1:5672"
  exit 1
}

ensure_rabbitmq
export SLUICE_AMQP_URL="${SLUICE_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}"
