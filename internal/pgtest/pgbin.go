package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serverBinaries are the programs a private server needs, all from one
// directory, so initdb and the server it prepares for are one version.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// findBinaries returns the first directory holding every one of
// serverBinaries: each directory of PATH, then /usr/local/bin, then
// /usr/lib/postgresql/<version>/bin, newest version first.
func findBinaries() (string, error) {
	dirs := filepath.SplitList(os.Getenv("PATH"))
	dirs = append(dirs, "/usr/local/bin")
	versioned, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versioned, func(i, j int) bool { return versionOf(versioned[i]) > versionOf(versioned[j]) })
	dirs = append(dirs, versioned...)
	for _, d := range dirs {
		if d != "" && hasAll(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s not found together in PATH, /usr/local/bin or /usr/lib/postgresql/*/bin",
		strings.Join(serverBinaries, ", "))
}

// versionOf is the major version in /usr/lib/postgresql/<version>/bin, or
// 0 when it is not a number.
func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// hasAll reports whether dir holds every one of serverBinaries as an
// executable file.
func hasAll(dir string) bool {
	for _, b := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// runner runs the server binaries of one directory, as another user when
// cred is set.
type runner struct {
	bin  string
	cred *syscall.Credential
}

// commandTimeout bounds one run of a binary. pg_ctl waits at most
// pgctlWait by itself; this only keeps a wedged binary from hanging the
// test.
const commandTimeout = 3 * time.Minute

// output runs the binary name with args and returns what it printed.
func (r runner) output(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.bin, name), args...)
	cmd.Env = cleanEnv()
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	// pg_ctl start leaves the server running; it sends the server's
	// output to the log, but should a pipe stay open, do not wait on it.
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// cleanEnv is the environment without the PG* variables, which would
// change where the binaries look for data or connect, and with a fixed
// locale.
func cleanEnv() []string {
	env := []string{"LC_ALL=C"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	return env
}

// serverUsers are the users a test running as root runs the server as,
// in order of preference: postgres refuses to run as root.
var serverUsers = []string{"postgres", "nobody"}

// newRunner returns the runner for the binaries of bin that serves dir.
// As root, it runs them as the first of serverUsers that exists, gives
// dir to that user and makes sure the user can reach it; it fails,
// saying why, when that cannot be done.
func newRunner(bin, dir string) (runner, error) {
	r := runner{bin: bin}
	if os.Geteuid() != 0 {
		return r, nil
	}
	u, err := lookupServerUser()
	if err != nil {
		return r, err
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return r, fmt.Errorf("running as root, and cannot give %s to user %s: %w", dir, u.Username, err)
	}
	if err := openPath(filepath.Dir(dir)); err != nil {
		return r, fmt.Errorf("running as root, and user %s cannot reach %s: %w", u.Username, dir, err)
	}
	if out, err := r.output("postgres", "--version"); err != nil {
		return r, fmt.Errorf("running as root, and cannot run postgres as user %s: %v %s", u.Username, err, out)
	}
	return r, nil
}

// lookupServerUser returns the first of serverUsers that exists.
func lookupServerUser() (*user.User, error) {
	for _, name := range serverUsers {
		if u, err := user.Lookup(name); err == nil && u.Uid != "0" {
			return u, nil
		}
	}
	return nil, fmt.Errorf("running as root, which postgres refuses, and none of the users %s exists to run it as",
		strings.Join(serverUsers, ", "))
}

// openPath lets every user pass through dir and each of its parents (the
// execute bit for others), as a test's temporary directories are made
// private to their owner. It changes only directories root owns below
// the temporary directory tests use (GOTMPDIR, else the system's), and
// fails naming the first other one that stays closed.
func openPath(dir string) error {
	tmp := os.Getenv("GOTMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	tmp = filepath.Clean(tmp)
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || st.Uid != 0 || !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
				return fmt.Errorf("%s is closed to other users (mode %v)", d, fi.Mode().Perm())
			}
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
