# Sourced by .ci/run before the tests: the Postgres store's tests
# (queue/pgqueue) run against the local server when SLUICE_POSTGRES_URL is
# set, and skip otherwise. This finds the server on 127.0.0.1:5432 (or
# starts the installed cluster, or installs one), makes the test database
# sluice_test, and exports the URL unless the caller set one.
_sluice_pg_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

_sluice_pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

_sluice_pg_start() {
  if ! command -v pg_ctlcluster >/dev/null; then
    echo "== installing postgresql for the Postgres store's tests"
    _sluice_pg_root apt-get update -qq
    _sluice_pg_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  local v
  for v in $(ls /etc/postgresql 2>/dev/null); do
    _sluice_pg_root pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null || true
  done
  for _ in $(seq 50); do _sluice_pg_up && return 0; sleep 0.2; done
  return 1
}

# _sluice_pg_psql runs psql as postgres over TCP, or, when the server asks
# TCP clients for a password (a fresh install), over the local socket as
# the postgres system user.
_sluice_pg_psql() {
  psql -h 127.0.0.1 -U postgres -w -Atq "$@" 2>/dev/null && return 0
  command -v runuser >/dev/null && _sluice_pg_root runuser -u postgres -- psql -Atq "$@"
}

_sluice_pg_setup() {
  _sluice_pg_up || _sluice_pg_start || { echo "postgres did not start; its tests will skip"; return 1; }
  local url="postgres://postgres@127.0.0.1:5432/sluice_test?sslmode=disable"
  if ! psql -h 127.0.0.1 -U postgres -w -Atq -c 'SELECT 1' postgres >/dev/null 2>&1; then
    # Password authentication on TCP: give postgres a password to use.
    _sluice_pg_psql -c "ALTER USER postgres PASSWORD 'postgres'" postgres || return 1
    url="postgres://postgres:postgres@127.0.0.1:5432/sluice_test?sslmode=disable"
  fi
  if [ "$(_sluice_pg_psql -c "SELECT 1 FROM pg_database WHERE datname = 'sluice_test'" postgres)" != 1 ]; then
    _sluice_pg_psql -c 'CREATE DATABASE sluice_test' postgres || return 1
  fi
  export SLUICE_POSTGRES_URL="$url"
}

if [ -z "${SLUICE_POSTGRES_URL:-}" ]; then
  if _sluice_pg_setup; then echo "postgres: $SLUICE_POSTGRES_URL"; fi
else
  echo "postgres: $SLUICE_POSTGRES_URL (set by the caller)"
fi
unset -f _sluice_pg_root _sluice_pg_up _sluice_pg_start _sluice_pg_psql _sluice_pg_setup
