package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// scheduleRoutes are the schedule endpoints (see routes.go).
func (s *Server) scheduleRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/schedules", role: config.RoleProducer, job: true, handler: s.handleListSchedules},
		{method: "GET", path: "/v1/schedules/{name}", role: config.RoleProducer, job: true, handler: s.handleGetSchedule},
		{method: "PUT", path: "/v1/schedules/{name}", role: config.RoleAdmin, job: true, handler: s.handleSetSchedule},
		{method: "DELETE", path: "/v1/schedules/{name}", role: config.RoleAdmin, job: true, handler: s.handleDeleteSchedule},
		{method: "POST", path: "/v1/schedules/{name}/pause", role: config.RoleAdmin, job: true, handler: s.handlePauseSchedule(true)},
		{method: "POST", path: "/v1/schedules/{name}/resume", role: config.RoleAdmin, job: true, handler: s.handlePauseSchedule(false)},
		{method: "POST", path: "/v1/schedules/{name}/trigger", role: config.RoleProducer, job: true, handler: s.handleTriggerSchedule},
	}
}

// scheduleSpecBody is a schedule's definition in JSON (PUT's body); the
// name comes from the path.
type scheduleSpecBody struct {
	Cron     string      `json:"cron,omitempty"`
	EveryMS  int64       `json:"every_ms,omitempty"`
	TimeZone string      `json:"time_zone,omitempty"`
	Job      jobSpecBody `json:"job"`
	JitterMS int64       `json:"jitter_ms,omitempty"`
	Overlap  string      `json:"overlap,omitempty"`
	Missed   string      `json:"missed,omitempty"`
	CatchUp  int         `json:"catch_up,omitempty"`
	GraceMS  int64       `json:"grace_ms,omitempty"`
}

// scheduleBody is a stored schedule with its state.
type scheduleBody struct {
	Name string `json:"name"`
	scheduleSpecBody
	Source    string           `json:"source"`
	Paused    bool             `json:"paused"`
	LastTick  *time.Time       `json:"last_tick,omitempty"`
	Next      []time.Time      `json:"next"`
	LastRun   *scheduleRunBody `json:"last_run,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
}

type scheduleRunBody struct {
	JobID string      `json:"job_id"`
	Tick  *time.Time  `json:"tick,omitempty"`
	At    time.Time   `json:"at"`
	State queue.State `json:"state,omitempty"`
}

type scheduleListBody struct {
	Schedules []scheduleBody `json:"schedules"`
}

// schedule turns the body into a queue.Schedule named name.
func (b scheduleSpecBody) schedule(name string) (queue.Schedule, *problem) {
	sc := queue.Schedule{
		Name: name, Cron: b.Cron, TimeZone: b.TimeZone, Overlap: queue.OverlapPolicy(b.Overlap),
		Missed: queue.MissedPolicy(b.Missed), CatchUp: b.CatchUp,
	}
	var p *problem
	for _, d := range []struct {
		field string
		ms    int64
		to    *time.Duration
	}{{"every_ms", b.EveryMS, &sc.Every}, {"jitter_ms", b.JitterMS, &sc.Jitter}, {"grace_ms", b.GraceMS, &sc.Grace}} {
		if *d.to, p = millis(d.field, d.ms); p != nil {
			return sc, p
		}
	}
	sc.Job, p = b.Job.spec(time.Now(), "job")
	return sc, p
}

func toScheduleBody(i *queue.ScheduleInfo) scheduleBody {
	sc := i.Schedule
	job := jobSpecBody{
		Queue: sc.Job.Queue, Kind: sc.Job.Kind, Tenant: sc.Job.Tenant, Group: sc.Job.Group,
		Priority: sc.Job.Priority, MaxAttempts: sc.Job.MaxAttempts, TimeoutMS: sc.Job.Timeout.Milliseconds(),
		Webhook: redactHook(sc.Job.Webhook), // jobhooks.go
	}
	job.Payload, _ = rawOrBase64(sc.Job.Payload)
	b := scheduleBody{
		Name: sc.Name,
		scheduleSpecBody: scheduleSpecBody{
			Cron: sc.Cron, EveryMS: sc.Every.Milliseconds(), TimeZone: sc.TimeZone, Job: job,
			JitterMS: sc.Jitter.Milliseconds(), Overlap: string(sc.Overlap), Missed: string(sc.Missed),
			CatchUp: sc.CatchUp, GraceMS: sc.Grace.Milliseconds(),
		},
		Source: i.Source, Paused: i.Paused, LastTick: timePtr(i.LastTick), Next: i.Next,
		CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt,
	}
	if b.Next == nil {
		b.Next = []time.Time{}
	}
	if r := i.LastRun; r != nil {
		b.LastRun = &scheduleRunBody{JobID: r.JobID, Tick: timePtr(r.Tick), At: r.At, State: r.State}
	}
	return b
}

func (s *Server) handleListSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.jobs.Schedules(r.Context())
	if err != nil {
		s.scheduleError(w, r, err)
		return
	}
	out := scheduleListBody{Schedules: make([]scheduleBody, len(list))}
	for i, info := range list {
		out.Schedules[i] = toScheduleBody(info)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetSchedule(w http.ResponseWriter, r *http.Request) {
	info, err := s.jobs.Schedule(r.Context(), r.PathValue("name"))
	if err != nil {
		s.scheduleError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toScheduleBody(info))
}

func (s *Server) handleSetSchedule(w http.ResponseWriter, r *http.Request) {
	var body scheduleSpecBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	sc, p := body.schedule(r.PathValue("name"))
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	info, err := s.jobs.SetSchedule(r.Context(), sc)
	if err != nil {
		s.scheduleError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toScheduleBody(info))
}

func (s *Server) handleDeleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.jobs.DeleteSchedule(r.Context(), r.PathValue("name")); err != nil {
		s.scheduleError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handlePauseSchedule(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op := s.jobs.ResumeSchedule
		if pause {
			op = s.jobs.PauseSchedule
		}
		info, err := op(r.Context(), r.PathValue("name"))
		if err != nil {
			s.scheduleError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, toScheduleBody(info))
	}
}

func (s *Server) handleTriggerSchedule(w http.ResponseWriter, r *http.Request) {
	j, err := s.jobs.TriggerSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		s.scheduleError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, enqueuedBody{Job: toJobBody(j)})
}

// scheduleError answers the errors of the schedule calls; the rest are
// the job calls' (jobError).
func (s *Server) scheduleError(w http.ResponseWriter, r *http.Request, err error) {
	var ia *queue.InvalidArgumentError
	var ue *queue.UnsupportedError
	switch {
	case errors.Is(err, queue.ErrScheduleNotFound):
		writeProblem(w, notFound("unknown schedule %q", clip(r.PathValue("name"))), nil)
	case errors.Is(err, queue.ErrScheduleOwned):
		writeProblem(w, &problem{Status: http.StatusConflict, Detail: fmt.Sprintf(
			"schedule %q is defined in the server's config file (schedules:), which wins: change or remove it there", clip(r.PathValue("name")))}, nil)
	case errors.As(err, &ia) && ia.Path.Type == "Schedule":
		writeProblem(w, badRequest("%s %s", scheduleAPIField(ia.Path.Name), scheduleRule(ia.Rule, scheduleAPIField)), nil)
	case errors.As(err, &ue) && ue.Feature == queue.CapSchedules:
		writeProblem(w, &problem{Status: http.StatusNotImplemented, Detail: fmt.Sprintf(
			"the job store (%s) does not keep schedules: run them on SQLite, Postgres or Redis", ue.Backend)}, nil)
	case errors.As(err, &ue):
		writeProblem(w, &problem{Status: http.StatusNotImplemented, Detail: strings.TrimPrefix(err.Error(), "queue: ")}, nil)
	default:
		s.jobError(w, r, err)
	}
}

// scheduleRule names, in a rule of the queue package, the fields it
// refers to as the caller's surface does (field maps each of Cron and
// Every): "set exactly one of cron and every_ms".
func scheduleRule(rule string, field func(string) string) string {
	if !strings.Contains(rule, "Cron and Every") {
		return rule
	}
	return strings.NewReplacer("Cron", field("Cron"), "Every", field("Every")).Replace(rule)
}

// scheduleAPIField names a field of queue.Schedule as the API does.
func scheduleAPIField(name string) string {
	if job, ok := strings.CutPrefix(name, "Job."); ok {
		return "job." + apiField(queue.Field("JobSpec", job))
	}
	names := map[string]string{
		"Name": "name", "Cron": "cron", "Every": "every_ms", "TimeZone": "time_zone", "Jitter": "jitter_ms",
		"Overlap": "overlap", "Missed": "missed", "CatchUp": "catch_up", "Grace": "grace_ms",
	}
	if n, ok := names[name]; ok {
		return n
	}
	return name
}
