// Command sweep prices 60 dates, one upstream call each, against a local
// upstream that answers a few requests and then puts up a consent wall, as
// a real site does once it decides a client is a scraper. It shows the
// sweep-health breaker stopping the sweep after five blocked dates instead of
// paying three fetches for each of the 60, and prints how many calls that
// saved.
//
//	go run ./examples/sweep
//	go run ./examples/sweep -workers 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
)

const (
	dates        = 60
	fetchesEach  = 3 // a blank page may be transient, so each date tries 3 times
	openRequests = 3 // the upstream answers this many requests before the wall
)

func main() {
	workers := flag.Int("workers", flow.DefaultWorkers, "dates priced at once")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *workers); err != nil {
		log.Fatal(err)
	}
}

// upstream serves prices for its first openRequests requests and a consent
// page after that, counting every request.
type upstream struct{ requests atomic.Int64 }

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := u.requests.Add(1); n <= openRequests {
		fmt.Fprintf(w, "<html><p>Cheapest fare on %s: <b data-price=\"%d\">$%d</b></p></html>", r.URL.Query().Get("date"), 100+n, 100+n)
		return
	}
	fmt.Fprint(w, "<html><h1>Before you continue</h1><p>We use cookies…</p></html>")
}

var (
	pricePattern = regexp.MustCompile(`data-price="(\d+)"`)
	errNoPrice   = errors.New("page has no price (consent or block page?)")
)

// pricer fetches one date's cheapest fare through a client whose Transport
// holds the budget and the HTTP-level retries.
type pricer struct {
	client *http.Client
	base   string
}

func (p pricer) fetch(ctx context.Context, date string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/search?date="+date, nil)
	if err != nil {
		return 0, flow.Permanent(err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := pricePattern.FindSubmatch(body)
	if m == nil {
		return 0, errNoPrice
	}
	return strconv.Atoi(string(m[1]))
}

// price retries a page without a price (it is sometimes transient); three in
// a row is a wall, reported as Blocked so the sweep's breaker counts it.
// Transport errors are not marked: they say nothing about the next date.
func (p pricer) price(ctx context.Context, date string) (int, error) {
	policy := flow.Policy{Attempts: fetchesEach, Backoff: 5 * time.Millisecond}
	price, err := flow.RetryValue(ctx, policy, func(ctx context.Context) (int, error) { return p.fetch(ctx, date) })
	if errors.Is(err, errNoPrice) {
		return 0, flow.Blocked(err)
	}
	return price, err
}

func run(ctx context.Context, out io.Writer, workers int) error {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	// One budget for the upstream, shared by everything that calls it.
	budget, err := flow.NewBudget(50, time.Second)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: flow.Transport(base, flow.WithBudget(budget))}
	p := pricer{client: client, base: srv.URL}

	// A few ordinary lookups go through before the wall goes up.
	for i := range openRequests {
		price, err := p.price(ctx, day(i))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "lookup %s: $%d\n", day(i), price)
	}
	before := up.requests.Load()

	all := make([]string, dates)
	for i := range all {
		all[i] = day(openRequests + i)
	}
	res, err := flow.Sweep(ctx, all, p.price, flow.ItemName("date"),
		flow.SweepMapOptions(flow.Workers(workers)), flow.SweepLogger(slog.New(slog.DiscardHandler)))
	report(out, res, up.requests.Load()-before, err)
	return nil
}

func report(out io.Writer, res *flow.SweepResult[int], calls int64, err error) {
	fmt.Fprintf(out, "swept %d dates: %d loaded, %d failed (%d blocked), %d skipped\n",
		len(res.Items), res.Loaded, res.Failed, res.Blocked, res.Skipped)
	fmt.Fprintf(out, "upstream calls for the sweep: %d\n", calls)
	without := int64(len(res.Items) * fetchesEach)
	fmt.Fprintf(out, "without the breaker: %d calls; the breaker saved %d\n", without, without-calls)
	if err != nil {
		fmt.Fprintf(out, "sweep error: %v\n", err)
	}
}

func day(i int) string {
	return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.DateOnly)
}
