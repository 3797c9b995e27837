package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// Resolver looks up the addresses of a host name. The default is the
// system resolver (net.Dialer's); tests inject one to make a name resolve
// to an address of their choice.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// NewClient returns the HTTP client deliveries use: it connects only to
// addresses g allows, checked on the resolved address at dial time, uses
// no proxy (a proxy would connect on the guard's behalf), and does not
// follow redirects (the 3xx response is returned). resolve may be nil for
// the system resolver. Timeouts are per request, set by the caller's
// context.
func NewClient(g Guard, resolve Resolver) *http.Client {
	d := &guardedDialer{
		nd:      &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control},
		resolve: resolve,
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   64, // many events go to one receiver: keep its connections
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type guardedDialer struct {
	nd      *net.Dialer
	resolve Resolver
}

// DialContext dials addr, resolving its host with the injected resolver
// when there is one. Either way the dialer's Control checks each address.
func (d *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || d.resolve == nil {
		return d.nd.DialContext(ctx, network, addr)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return d.nd.DialContext(ctx, network, addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, err
	}
	ips, err := d.resolve(ctx, host)
	if err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: host}
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var errs []error
	for _, ip := range ips {
		c, err := d.nd.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(p)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
