package pgqueue

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestServerGone(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", fmt.Errorf("lease: %w", &pgconn.PgError{Code: "57P02"}), true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection cut", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"refused", refused, true},
		{"reset", fmt.Errorf("write: %w", syscall.ECONNRESET), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"serialization", &pgconn.PgError{Code: "40001"}, false},
		{"other", errors.New("boom"), false},
	}
	for _, tc := range cases {
		if got := serverGone(tc.err); got != tc.want {
			t.Errorf("%s: serverGone(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
