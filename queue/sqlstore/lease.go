package sqlstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// PlainBatch bounds how many due jobs without tenant or group a
// dialect's set-based promotion (SchedDialect.PromotePlain) makes pending
// in one Lease; the jobs placed one by one are bounded by SchedBatch.
const PlainBatch = 1000

// pickRounds bounds how often Pick looks for more candidates after moving
// blocked ones to waiting.
const pickRounds = 4

// Lease is the scheduler's Lease of up to max jobs of queues, in the
// order every store does it (internal/sched): the time-driven work
// (Maintain), then the pick of the best pending jobs their tenants and
// groups let start (Pick); activate makes the picked jobs active, by the
// dialect's one statement; then what their start changes is recorded.
func (s *Sched) Lease(queues []string, max int, activate func(picked []Cand) error) error {
	queues = SchedQueues(queues)
	if err := s.Maintain(queues); err != nil {
		return err
	}
	picked, ls, err := s.Pick(queues, max)
	if err != nil {
		return err
	}
	if err := activate(picked); err != nil {
		return err
	}
	return ls.started()
}

// SchedQueues returns qs without repeats, in order.
func SchedQueues(qs []string) []string {
	if len(qs) == 1 {
		return qs
	}
	out := qs[:0:0]
	for _, q := range qs {
		out = schedAddOnce(out, q)
	}
	return out
}

// Maintain does a Lease's time-driven work before it picks, in the order
// every store does it (internal/sched): the due jobs of queues become
// ready (pending or waiting), queue by queue; the tenants, then the
// groups, whose pause or crawl delay has ended release their waiting
// jobs; jobs that waited past their tenant's MaxWait fail; groups past
// their TTL are cancelled. One read (MaintainDue) tells which steps have
// work, so an idle step costs nothing.
func (s *Sched) Maintain(queues []string) error {
	var due [5]int64
	if err := s.Tx.QueryRow(s.St.MaintainDue, queues[0]).Scan(&due[0], &due[1], &due[2], &due[3], &due[4]); err != nil {
		return err
	}
	for i, q := range queues {
		qdue := due[0]
		if i > 0 {
			if err := s.Tx.QueryRow(s.St.QueueDue, q).Scan(&qdue); err != nil {
				return err
			}
		}
		if qdue > 0 && qdue <= s.Now {
			if err := s.promoteDue(q); err != nil {
				return err
			}
		}
	}
	steps := [4]func() error{s.wakeTenants, s.wakeGroups, s.expireWaits, s.expireGroups}
	for i, step := range steps {
		if at := due[i+1]; at == 0 || at > s.Now {
			continue
		}
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// promoteDue makes queue q's due jobs ready, by due time then id: the
// plain ones by the dialect's set-based statement, then each in turn. A
// job ready for the first time gets its fair tag, so the tags follow the
// due order whatever the jobs' scopes; then it goes pending or waits.
func (s *Sched) promoteDue(q string) error {
	if err := s.D.PromotePlain(q); err != nil {
		return err
	}
	rows, err := s.Tx.Query(s.St.Due, q, s.Now, SchedBatch)
	if err != nil {
		return err
	}
	var list []Placing
	for rows.Next() {
		p := Placing{Queue: q}
		if err := rows.Scan(&p.ID, &p.From, &p.Tenant, &p.Grp, &p.Priority, &p.HasTag); err != nil {
			rows.Close()
			return err
		}
		list = append(list, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range list {
		if _, err := s.Place(p); err != nil {
			return err
		}
	}
	return nil
}

// Placing is a job to make ready (Place), as it was read.
type Placing struct {
	ID                 int64
	Queue, Tenant, Grp string
	Priority           int
	From               string // its state when read
	HasTag             bool   // it has its fair tag already
	Self               bool   // it counts as pending already
}

// Place makes job p ready: it gets its fair tag unless it has one, then
// goes pending, or waiting for its tenant or group. It reports false, and
// changes nothing, when the job is no longer as it was read (another step
// may have placed it meanwhile).
func (s *Sched) Place(p Placing) (bool, error) {
	if err := s.D.LockScopes(p.Tenant, p.Grp); err != nil {
		return false, err
	}
	hold := ""
	var err error
	if p.Tenant != "" || p.Grp != "" {
		if hold, err = s.HoldFor(p.Tenant, p.Grp, p.Self); err != nil {
			return false, err
		}
	}
	state, waitEnd := queue.StatePending, int64(0)
	if hold != "" {
		state = queue.StateWaiting
		if waitEnd, err = s.WaitUntil(p.Tenant); err != nil {
			return false, err
		}
	}
	var tag [4]any // NULL: the job keeps its tag
	k := schedFairKey{p.Queue, p.Tenant}
	prev, had := s.finish[k]
	if !p.HasTag {
		start, finish, band, rank, err := s.Tag(p.Queue, p.Tenant, p.Priority)
		if err != nil {
			return false, err
		}
		tag = [4]any{start, finish, band, rank}
	}
	n, err := s.Tx.Exec(s.St.Place, string(state), hold, waitEnd, s.Now, tag[0], tag[1], tag[2], tag[3], p.ID, p.From, p.HasTag)
	if err != nil {
		return false, err
	}
	if n == 0 {
		if !p.HasTag { // give the tag back
			if had {
				s.finish[k] = prev
			} else {
				delete(s.finish, k)
			}
		}
		return false, nil
	}
	if hold == "" {
		s.ReadyQueue(p.Queue)
	}
	return true, nil
}

// wakeTenants and wakeGroups fill the scopes whose wake has come (a pause
// or crawl delay ended, or a fill stopped at its bound), by wake then
// name.
func (s *Sched) wakeTenants() error {
	return s.wake(s.St.TenantsToWake, s.St.TenantWoken, ScopeTenant, s.FillTenant)
}

func (s *Sched) wakeGroups() error {
	return s.wake(s.St.GroupsToWake, s.St.GroupWoken, ScopeGroup, s.FillGroup)
}

func (s *Sched) wake(list, woken, kind string, fill func(string) error) error {
	names, err := s.Names(list, s.Now, SchedBatch)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.D.LockScope(kind, n); err != nil {
			return err
		}
		if _, err := s.Tx.Exec(woken, n, s.Now); err != nil {
			return err
		}
		if err := fill(n); err != nil {
			return err
		}
	}
	return nil
}

// Names runs a query that lists one text column.
func (s *Sched) Names(query string, args ...any) ([]string, error) {
	rows, err := s.Tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// expireWaits fails the waiting jobs whose MaxWait deadline has passed,
// then settles, once, those it failed.
func (s *Sched) expireWaits() error {
	rows, err := s.Tx.Query(s.St.WaitedTooLong, s.Now, SchedBatch)
	if err != nil {
		return err
	}
	var list []*queue.Job
	for rows.Next() {
		j, err := s.D.ScanJob(rows)
		if err != nil {
			rows.Close()
			return err
		}
		list = append(list, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var done []*queue.Job
	for _, j := range list {
		ok, err := s.failWaiting(j)
		if err != nil {
			return err
		}
		if ok {
			done = append(done, j)
		}
	}
	return s.SettleJobs(done)
}

// failWaiting fails, under its scopes' locks, a job that waited past its
// tenant's MaxWait, unless it left waiting or got a later deadline before
// the locks were taken.
func (s *Sched) failWaiting(j *queue.Job) (bool, error) {
	if err := s.D.LockScopes(j.Tenant, j.Group); err != nil {
		return false, err
	}
	t, err := s.Tenant(j.Tenant)
	if err != nil {
		return false, err
	}
	id, err := strconv.ParseInt(j.ID, 10, 64)
	if err != nil {
		return false, err
	}
	msg := fmt.Sprintf("%v: waited longer than tenant %s's MaxWait of %s", queue.ErrBacklogFull, j.Tenant, t.Eff.MaxWait)
	hist, err := schedErrors(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: schedTime(s.Now), Error: msg})
	if err != nil {
		return false, err
	}
	n, err := s.Tx.Exec(s.St.FailWaiting, msg, hist, s.Now, id)
	if err != nil || n == 0 {
		return false, err
	}
	return true, s.D.JobFailed(id)
}

// expireGroups cancels the groups whose TTL has run out, by deadline then
// id.
func (s *Sched) expireGroups() error {
	ids, err := s.Names(s.St.GroupsExpired, s.Now, SchedBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.CancelGroup(id); err != nil {
			return err
		}
	}
	return nil
}

// Cand is a pending job a Lease may hand out.
type Cand struct {
	ID, Band, Rank, Start int64
	Queue, Tenant, Grp    string
	pos, qi               int // place in its queue's list, and the queue's index
}

// Pick chooses up to max pending jobs of queues (without repeats) in the
// fair order, checking each against its tenant's and group's limits with
// the counts of this step; a candidate that is blocked moves to waiting.
// Across queues, the lower band goes first and queues take turns within a
// band.
func (s *Sched) Pick(queues []string, max int) ([]Cand, *LeaseScopes, error) {
	ls := &LeaseScopes{s: s}
	var picked []Cand
	taken := map[int64]bool{}
	for round := 0; round < pickRounds && len(picked) < max; round++ {
		// The first look asks for just enough; after blocked jobs moved
		// to waiting, later looks see past the picked ones (still
		// pending) and ask for more.
		n := max
		if round > 0 {
			n = len(picked) + 2*(max-len(picked)) + 16<<round
		}
		cands, full, err := s.candidates(queues, n)
		if err != nil {
			return nil, nil, err
		}
		held := 0
		for _, c := range cands {
			if len(picked) == max {
				break
			}
			if taken[c.ID] {
				continue
			}
			hold, err := ls.check(c)
			if err != nil {
				return nil, nil, err
			}
			if hold == "" {
				picked = append(picked, c)
				taken[c.ID] = true
				continue
			}
			ok, err := s.Hold(c.ID, c.Tenant, hold)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				ls.owe(c, hold)
				held++
			}
		}
		if held == 0 || !full {
			break
		}
	}
	return picked, ls, nil
}

// candidates lists up to n pending jobs of each queue not paused, merged,
// and reports whether any queue had more. A job is a candidate only when
// the step holds its tenant's and group's locks (TryScopes): one whose
// scope another step holds is left for a later Lease.
func (s *Sched) candidates(queues []string, n int) ([]Cand, bool, error) {
	var all []Cand
	full := false
	for qi, q := range queues {
		paused, err := s.D.QueuePausedUntil(q)
		if err != nil {
			return nil, false, err
		}
		if paused > s.Now {
			continue
		}
		rows, err := s.Tx.Query(s.St.Ready, q, n)
		if err != nil {
			return nil, false, err
		}
		first := len(all)
		for rows.Next() {
			c := Cand{Queue: q, pos: len(all) - first, qi: qi}
			var start *int64
			if err := rows.Scan(&c.ID, &c.Tenant, &c.Grp, &c.Band, &c.Rank, &start); err != nil {
				rows.Close()
				return nil, false, err
			}
			if start != nil {
				c.Start = *start
			}
			all = append(all, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
		read := len(all) - first
		full = full || read == n
		kept := all[:first]
		for _, c := range all[first:] {
			ok, err := s.D.TryScopes(c.Tenant, c.Grp)
			if err != nil {
				return nil, false, err
			}
			if ok {
				kept = append(kept, c)
			}
		}
		all = kept
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Band != b.Band {
			return a.Band < b.Band
		}
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		return a.qi < b.qi
	})
	return all, full, nil
}

// LeaseScopes tracks, during one pick, each scope's active jobs including
// the ones picked so far, and what the picks owe once they are active.
type LeaseScopes struct {
	s       *Sched
	active  map[string]int64 // per tenant
	groups  map[string]*leaseGroup
	crawled []string // groups with a crawl delay that started a job
	// Fills owed: a job held for one scope left room in its other scope.
	fillTenants, fillGroups []string
}

// leaseGroup is a group as one pick sees it.
type leaseGroup struct {
	row    *GroupRow // nil: the group is gone
	active int64
}

func (ls *LeaseScopes) group(id string) (*leaseGroup, error) {
	if g, ok := ls.groups[id]; ok {
		return g, nil
	}
	if ls.groups == nil {
		ls.groups = map[string]*leaseGroup{}
	}
	g := &leaseGroup{}
	row, err := ls.s.Group(id)
	switch {
	case errors.Is(err, queue.ErrGroupNotFound):
	case err != nil:
		return nil, err
	default:
		g.row = row
		if row.Spec.MaxConcurrency > 0 { // else the count does not matter
			if g.active, err = ls.s.D.ScopeCount(ScopeGroup, id, queue.StateActive); err != nil {
				return nil, err
			}
		}
	}
	ls.groups[id] = g
	return g, nil
}

// check returns "" and counts c as started when its tenant and group let
// it start now, or the scope that holds it back.
func (ls *LeaseScopes) check(c Cand) (string, error) {
	s := ls.s
	n, counted := int64(0), false
	if c.Tenant != "" {
		t, err := s.Tenant(c.Tenant)
		if err != nil {
			return "", err
		}
		var ok bool
		n, ok = ls.active[c.Tenant]
		if !ok && t.Eff.Limit != queue.Unlimited { // an unlimited tenant's count does not matter
			if n, err = s.D.ScopeCount(ScopeTenant, c.Tenant, queue.StateActive); err != nil {
				return "", err
			}
		}
		room, wake := rules.TenantRoom(t.Eff.Limit, schedTime(t.PausedUntil), schedTime(s.Now), n)
		if !wake.IsZero() {
			return HoldTenant, s.WakeTenant(c.Tenant, schedNanos(wake))
		}
		if !room {
			return HoldTenant, nil
		}
		counted = true
	}
	var g *leaseGroup
	if c.Grp != "" {
		var err error
		if g, err = ls.group(c.Grp); err != nil {
			return "", err
		}
		if g.row != nil {
			ok, wake := rules.GroupMayStart(g.row.Limits(), schedTime(s.Now), g.active)
			if !wake.IsZero() {
				return HoldGroup, s.WakeGroup(c.Grp, schedNanos(wake))
			}
			if !ok {
				return HoldGroup, nil
			}
		}
	}
	if counted {
		if ls.active == nil {
			ls.active = map[string]int64{}
		}
		ls.active[c.Tenant] = n + 1
	}
	if g != nil && g.row != nil {
		g.active++
		if g.row.Spec.MinInterval > 0 {
			g.row.LastStart = s.Now
			ls.crawled = schedAddOnce(ls.crawled, c.Grp)
		}
	}
	return "", nil
}

// owe records the fill a candidate moved to waiting for hold owes its
// other scope.
func (ls *LeaseScopes) owe(c Cand, hold string) {
	if hold == HoldGroup {
		ls.fillTenants = schedAddOnce(ls.fillTenants, c.Tenant)
	}
	if hold == HoldTenant {
		ls.fillGroups = schedAddOnce(ls.fillGroups, c.Grp)
	}
}

// started records what the picked jobs, now active, change: the last
// start of groups with a crawl delay (and a wake when it ends), then the
// fills owed, tenants first.
func (ls *LeaseScopes) started() error {
	s := ls.s
	for _, id := range ls.crawled {
		g := ls.groups[id]
		if _, err := s.Tx.Exec(s.St.GroupStarted, s.Now, id); err != nil {
			return err
		}
		if err := s.WakeGroup(id, s.Now+int64(min(max(g.row.Spec.MinInterval, 0), queue.MaxDuration))); err != nil {
			return err
		}
	}
	for _, t := range ls.fillTenants {
		if err := s.FillTenant(t); err != nil {
			return err
		}
	}
	for _, g := range ls.fillGroups {
		if err := s.FillGroup(g); err != nil {
			return err
		}
	}
	return nil
}

// schedErrors appends e to a job's error history, keeping the last
// queue.MaxErrorHistory, as the stored JSON text.
func schedErrors(hist []queue.AttemptError, e queue.AttemptError) (string, error) {
	hist = append(hist, e)
	if n := len(hist) - queue.MaxErrorHistory; n > 0 {
		hist = hist[n:]
	}
	out, err := json.Marshal(hist)
	return string(out), err
}

// FailOutcome is where a failed attempt of a job leaves it, as every
// store decides it: cancelled when its cancel was asked for, failed when
// the failure is permanent or its attempts are spent, else retrying at
// retryAt. It also returns the job's error history with this attempt's
// error, and its finish time (0 unless final).
func FailOutcome(f backend.Failure, attempt, maxAttempts int, cancel bool, hist []queue.AttemptError, now int64) (next queue.State, errs string, finished, retryAt int64, err error) {
	next = queue.StateRetrying
	switch {
	case cancel:
		next = queue.StateCancelled
	case f.Permanent || attempt >= maxAttempts:
		next = queue.StateFailed
	}
	errs, err = schedErrors(hist, queue.AttemptError{Attempt: attempt, At: schedTime(now), Error: f.Error})
	if next.Final() {
		return next, errs, now, 0, err
	}
	return next, errs, 0, now + int64(min(max(f.RetryIn, 0), queue.MaxDuration)), err
}

// LeaseTokenPrefix returns a fresh random prefix for the tokens of one
// Lease call: each job leased gets prefix + "." + its id, distinct per
// job and per lease.
func LeaseTokenPrefix() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// SnoozeState is where a job snoozed for d goes: pending at once, or
// scheduled until d has passed.
func SnoozeState(d time.Duration) queue.State {
	if d > 0 {
		return queue.StateScheduled
	}
	return queue.StatePending
}
