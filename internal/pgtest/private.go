package pgtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StopMode is how Server.Stop shuts the server down (pg_ctl -m).
type StopMode string

// The stop modes a test uses.
const (
	// Fast disconnects the clients, rolls back their transactions and
	// writes a checkpoint: a clean shutdown.
	Fast StopMode = "fast"
	// Immediate kills every server process at once, as a crash would:
	// the next start replays the WAL. A commit the server acknowledged is
	// kept; one it had not acknowledged may or may not be.
	Immediate StopMode = "immediate"
)

// pgctlWait bounds how long pg_ctl waits for a start or stop, in seconds:
// generous, for crash recovery on a loaded machine.
const pgctlWait = "120"

// Server is a private Postgres server for one test, in the test's own
// temporary directory and on a free port of 127.0.0.1, which the test may
// stop and start at will: what a shared database cannot offer. Its
// superuser is "postgres", trusted without a password. Its methods fail
// the test on error, so they must be called from the test's goroutine.
type Server struct {
	t    testing.TB
	run  runner // the binaries, as the user that runs them
	dir  string // the temporary directory: data, socket, log
	data string // the data directory
	log  string // the server's log file
	port int
}

// StartServer initialises a Postgres cluster in a temporary directory of
// t, starts it and returns it; the server is stopped when t ends. It skips
// t, saying why, when no Postgres binaries are found (initdb, pg_ctl and
// postgres, in PATH, /usr/local/bin or /usr/lib/postgresql/*/bin) or, when
// the test runs as root, which postgres refuses, when there is no
// unprivileged user to run them as.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Skipf("pgtest: no private Postgres: %v", err)
	}
	dir := t.TempDir()
	run, err := newRunner(bin, dir)
	if err != nil {
		t.Skipf("pgtest: no private Postgres: %v", err)
	}
	s := &Server{t: t, run: run, dir: dir, data: filepath.Join(dir, "data"), log: filepath.Join(dir, "postgres.log")}
	if out, err := run.output("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.cleanup)
	s.startOnFreePort()
	return s
}

// URL is the server's database "postgres" as its superuser, in the form
// Open and pgx take.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Port is the server's TCP port on 127.0.0.1; it stays the same across
// restarts, so clients reconnect to the same address.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down in mode and returns once it has stopped.
func (s *Server) Stop(mode StopMode) {
	s.t.Helper()
	if out, err := s.pgctl("stop", "-m", string(mode)); err != nil {
		s.t.Fatalf("pgtest: stop (%s): %v\n%s", mode, err, out)
	}
}

// Start starts the stopped server on its port and returns once it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// Restart stops the server in mode and starts it again.
func (s *Server) Restart(mode StopMode) {
	s.t.Helper()
	s.Stop(mode)
	s.Start()
}

// startOnFreePort picks a free port and starts the server on it; another
// process may take the port between the pick and the start, so it tries
// a few.
func (s *Server) startOnFreePort() {
	s.t.Helper()
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		s.port = port
		if err = s.configure(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			return
		}
	}
	s.t.Fatal(err)
}

// configure appends the test settings to postgresql.conf (a later line
// overrides an earlier one, so a new port replaces the last). fsync is off
// for speed: a stop, even an immediate one, does not lose what the
// operating system was given, so acknowledged commits survive it. The
// Unix socket lives in the temporary directory when its path fits, and is
// off otherwise: clients use TCP.
func (s *Server) configure() error {
	sock := s.dir
	if len(sock)+len("/.s.PGSQL.65535") > 100 {
		sock = ""
	}
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
		"fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\nmax_connections = 50\n", s.port, sock)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgtest: configure: %w", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgtest: configure: %w", err)
	}
	return nil
}

// start runs pg_ctl start and waits until the server is ready.
func (s *Server) start() error {
	if out, err := s.pgctl("start", "-l", s.log); err != nil {
		return fmt.Errorf("pgtest: start on port %d: %v\n%s\nserver log:\n%s", s.port, err, out, s.logTail())
	}
	return nil
}

// pgctl runs pg_ctl op on the data directory, waiting for it to finish.
func (s *Server) pgctl(op string, args ...string) ([]byte, error) {
	all := append([]string{op, "-D", s.data, "-w", "-t", pgctlWait}, args...)
	return s.run.output("pg_ctl", all...)
}

// cleanup stops the server if it runs, before t's temporary directory is
// removed.
func (s *Server) cleanup() {
	if _, err := os.Stat(filepath.Join(s.data, "postmaster.pid")); err != nil {
		return // not running
	}
	if out, err := s.pgctl("stop", "-m", string(Immediate)); err != nil {
		s.t.Errorf("pgtest: stop at cleanup: %v\n%s", err, out)
	}
}

// logTail is the end of the server's log, for a failure message.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
