package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/loomkit/loom/checkpoint"
)

// This file serves the LangGraph API's crons: runs started on a
// schedule, on a thread of their own each time (stateless) or on one
// thread. A cron is a row with its next run's time; whoever fires it
// first moves that time on with a compare-and-set (UPDATE … WHERE
// next_run = the time it read), so of several replicas exactly one fires
// each tick. The ticks come from the server's ticker (see tick.go): a
// goroutine on SQLite, a periodic River job on Postgres, which the
// queue's leader inserts once a second for one replica to work. A cron
// that was due several times while no server ran fires once, then
// follows its schedule from now.

// Limits of crons.
const (
	maxCronsPerKey = 100
	maxSchedule    = 200 // bytes of a schedule
	maxCronFire    = 100 // crons fired by one tick at most; the rest in the next
)

// cronParser reads schedules: the standard five fields (minute, hour,
// day of month, month, day of week), descriptors such as @hourly or
// @every 30s, and a CRON_TZ= prefix; times are UTC otherwise.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedule checks a schedule and returns it.
func parseSchedule(spec string) (cron.Schedule, error) {
	if spec == "" {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_schedule", "schedule is required: five cron fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"")
	}
	if len(spec) > maxSchedule {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_schedule", "schedule is longer than %d bytes", maxSchedule)
	}
	sched, err := cronParser.Parse(spec)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_schedule", "schedule %q: %v; want five cron fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"", spec, err)
	}
	if sched.Next(time.Now().UTC()).IsZero() {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_schedule", "schedule %q never fires", spec)
	}
	return sched, nil
}

// cronRecord is a cron as stored.
type cronRecord struct {
	ID, Owner, Assistant string
	Thread               string // the public thread id; "" for a stateless cron
	Schedule             string
	Payload              json.RawMessage // the run request, without the cron's own fields
	Metadata             json.RawMessage
	OnCompleted          string    // stateless crons: delete or keep the run's thread
	EndTime              time.Time // zero: no end
	Enabled              bool
	NextRun              time.Time
	Created, Updated     time.Time
}

const cronCols = `id, owner, assistant, thread, schedule, payload, metadata, on_completed, end_time, enabled, next_run, created, updated`

func scanCron(r scanner) (*cronRecord, error) {
	var c cronRecord
	var payload, meta string
	var end, next, created, updated int64
	var enabled int
	if err := r.Scan(&c.ID, &c.Owner, &c.Assistant, &c.Thread, &c.Schedule, &payload, &meta, &c.OnCompleted, &end, &enabled, &next, &created, &updated); err != nil {
		return nil, err
	}
	c.Payload, c.Metadata, c.Enabled = json.RawMessage(payload), json.RawMessage(meta), enabled != 0
	if end != 0 {
		c.EndTime = fromMS(end)
	}
	c.NextRun, c.Created, c.Updated = fromMS(next), fromMS(created), fromMS(updated)
	return &c, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// lgCron is a cron as the LangGraph API shows it.
type lgCron struct {
	CronID         string          `json:"cron_id"`
	AssistantID    string          `json:"assistant_id"`
	ThreadID       *string         `json:"thread_id"`
	OnRunCompleted string          `json:"on_run_completed,omitempty"`
	EndTime        *time.Time      `json:"end_time"`
	Schedule       string          `json:"schedule"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Payload        json.RawMessage `json:"payload"`
	UserID         *string         `json:"user_id"`
	NextRunDate    *time.Time      `json:"next_run_date"`
	Metadata       json.RawMessage `json:"metadata"`
	Enabled        bool            `json:"enabled"`
}

func (c *cronRecord) json() lgCron {
	out := lgCron{CronID: c.ID, AssistantID: c.Assistant, Schedule: c.Schedule, CreatedAt: c.Created, UpdatedAt: c.Updated,
		Payload: orEmptyObject(c.Payload), Metadata: orEmptyObject(c.Metadata), Enabled: c.Enabled}
	if c.Thread != "" {
		out.ThreadID = &c.Thread
	} else {
		out.OnRunCompleted = c.OnCompleted
	}
	if !c.EndTime.IsZero() {
		out.EndTime = &c.EndTime
	}
	if c.Enabled {
		out.NextRunDate = &c.NextRun
	}
	return out
}

// cronFields are the fields of a cron request that are the cron's own;
// the rest is the run request it starts each time.
var cronFields = []string{"schedule", "end_time", "on_run_completed", "enabled"}

// cronRequest is the body of the cron endpoints: the cron's own fields;
// Payload is the rest, a run request.
type cronRequest struct {
	Schedule       *string    `json:"schedule"`
	EndTime        *time.Time `json:"end_time"`
	OnRunCompleted string     `json:"on_run_completed"`
	Enabled        *bool      `json:"enabled"`
	Payload        map[string]json.RawMessage
}

// readCronRequest reads a cron request: its own fields, and the rest as
// the run request (fields given as null are left out).
func readCronRequest(r *http.Request) (*cronRequest, error) {
	var all map[string]json.RawMessage
	if err := decode(r, &all); err != nil {
		return nil, err
	}
	req := &cronRequest{Payload: map[string]json.RawMessage{}}
	own := map[string]json.RawMessage{}
	for k, v := range all {
		switch {
		case !present(v):
		case slices.Contains(cronFields, k):
			own[k] = v
		default:
			req.Payload[k] = v
		}
	}
	b, _ := json.Marshal(own)
	if err := unmarshalKnown(b, "cron", req); err != nil {
		return nil, err
	}
	if err := oneOf("on_run_completed", req.OnRunCompleted, "delete", "keep"); err != nil {
		return nil, err
	}
	return req, nil
}

// checkPayload checks the run request a cron starts as a run request on
// a thread would be checked (assistant, input, config, strategy), and
// returns it as stored.
func (s *Server) checkPayload(ctx context.Context, owner string, payload map[string]json.RawMessage) (json.RawMessage, string, error) {
	b, _ := json.Marshal(payload)
	var req runRequest
	if err := unmarshalKnown(b, "run", &req); err != nil {
		return nil, "", err
	}
	if req.AssistantID == "" {
		return nil, "", errorf(http.StatusUnprocessableEntity, "invalid_input", "assistant_id is required (one of: %s)", strings.Join(s.order, ", "))
	}
	if present(req.StreamMode) {
		return nil, "", errorf(http.StatusUnprocessableEntity, "unsupported", "stream_mode: a cron's runs are not streamed; read them with GET /threads/{thread_id}/runs")
	}
	if req.CheckpointID != "" || req.Checkpoint != nil {
		return nil, "", errorf(http.StatusUnprocessableEntity, "unsupported", "a cron's runs start from the thread's head: no checkpoint_id")
	}
	if err := req.checkOptions(); err != nil {
		return nil, "", err
	}
	a, layers, err := s.runAssistant(ctx, owner, req.AssistantID)
	if err != nil {
		return nil, "", err
	}
	if _, err := req.config(a, layers); err != nil {
		return nil, "", err
	}
	in, err := req.input(a)
	if err != nil {
		return nil, "", err
	}
	if in.Resume != nil {
		return nil, "", errorf(http.StatusUnprocessableEntity, "invalid_input", "a cron starts runs: command.resume answers one question once")
	}
	if _, err := req.strategy(); err != nil {
		return nil, "", err
	}
	if err := s.quotas.metadataSize("run", req.Metadata); err != nil {
		return nil, "", err
	}
	if q := s.quotas.MaxInput; q > 0 && len(req.Input) > q {
		return nil, "", tooLarge("run input", len(req.Input), q, "--max-input")
	}
	return b, req.AssistantID, nil
}

func (s *Server) cronRoutes(m *http.ServeMux) {
	for p, h := range map[string]handler{
		"POST /runs/crons":                      s.createCron,
		"POST /threads/{tid}/runs/crons":        s.createCron,
		"POST /runs/crons/search":               s.searchCrons,
		"POST /runs/crons/count":                s.countCrons,
		"PATCH /runs/crons/{id}":                s.patchCron,
		"DELETE /runs/crons/{id}":               s.deleteCron,
		"GET /threads/{tid}/runs/{rid}/webhook": s.runWebhook,
		"GET /webhooks/secret":                  s.webhookSecret,
		"POST /threads/prune":                   s.pruneThreads,
	} {
		m.Handle(p, s.api(h))
	}
}

func (s *Server) createCron(w http.ResponseWriter, r *http.Request, owner string) error {
	ctx := r.Context()
	req, err := readCronRequest(r)
	if err != nil {
		return err
	}
	if req.Schedule == nil {
		return errorf(http.StatusUnprocessableEntity, "invalid_schedule", "schedule is required: five cron fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"")
	}
	sched, err := parseSchedule(*req.Schedule)
	if err != nil {
		return err
	}
	tid := r.PathValue("tid")
	if tid != "" {
		if req.OnRunCompleted != "" {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "on_run_completed is for crons without a thread: a thread's runs stay on it")
		}
		var ifNotExists string
		_ = json.Unmarshal(req.Payload["if_not_exists"], &ifNotExists)
		if _, err := s.thread(ctx, tid, owner); err != nil {
			if ifNotExists != "create" {
				return err
			}
			if err := checkThreadID(tid); err != nil {
				return err
			}
		}
	}
	payload, assistant, err := s.checkPayload(ctx, owner, req.Payload)
	if err != nil {
		return err
	}
	var meta json.RawMessage
	if m, ok := req.Payload["metadata"]; ok {
		meta = m
	}
	now := time.Now().UTC()
	c := &cronRecord{ID: checkpoint.NewID(), Owner: owner, Assistant: assistant, Thread: tid, Schedule: *req.Schedule,
		Payload: payload, Metadata: orEmptyObject(meta), OnCompleted: req.OnRunCompleted, Enabled: req.Enabled == nil || *req.Enabled,
		NextRun: sched.Next(now), Created: now, Updated: now}
	if tid == "" && c.OnCompleted == "" {
		c.OnCompleted = "delete"
	}
	if req.EndTime != nil {
		c.EndTime = req.EndTime.UTC()
	}
	var n int
	if err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT count(*) FROM loom_crons WHERE owner = ?`), owner).Scan(&n); err != nil {
		return fmt.Errorf("count crons: %w", err)
	}
	if n >= maxCronsPerKey {
		return errorf(http.StatusUnprocessableEntity, "too_many_crons", "a key may keep at most %d crons; delete some first", maxCronsPerKey)
	}
	if _, err := s.records.exec(ctx, `INSERT INTO loom_crons (`+cronCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Owner, c.Assistant, c.Thread, c.Schedule, string(c.Payload), string(c.Metadata), c.OnCompleted,
		msOrZero(c.EndTime), boolInt(c.Enabled), ms(c.NextRun), ms(c.Created), ms(c.Updated)); err != nil {
		return fmt.Errorf("create cron: %w", err)
	}
	writeJSON(w, http.StatusOK, c.json())
	return nil
}

// cron returns owner's cron id, or a 404.
func (s *Server) cron(ctx context.Context, owner, id string) (*cronRecord, error) {
	c, err := scanCron(s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT `+cronCols+` FROM loom_crons WHERE id = ? AND owner = ?`), id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errorf(http.StatusNotFound, "not_found", "cron %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read cron %s: %w", id, err)
	}
	return c, nil
}

func (s *Server) patchCron(w http.ResponseWriter, r *http.Request, owner string) error {
	ctx := r.Context()
	c, err := s.cron(ctx, owner, r.PathValue("id"))
	if err != nil {
		return err
	}
	req, err := readCronRequest(r)
	if err != nil {
		return err
	}
	if req.OnRunCompleted != "" {
		if c.Thread != "" {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "on_run_completed is for crons without a thread: a thread's runs stay on it")
		}
		c.OnCompleted = req.OnRunCompleted
	}
	now := time.Now().UTC()
	if req.Schedule != nil {
		sched, err := parseSchedule(*req.Schedule)
		if err != nil {
			return err
		}
		c.Schedule, c.NextRun = *req.Schedule, sched.Next(now)
	}
	if req.EndTime != nil {
		c.EndTime = req.EndTime.UTC()
	}
	if req.Enabled != nil {
		if *req.Enabled && !c.Enabled && req.Schedule == nil {
			sched, _ := parseSchedule(c.Schedule)
			c.NextRun = sched.Next(now) // no catching up on the ticks it was off
		}
		c.Enabled = *req.Enabled
	}
	if len(req.Payload) > 0 {
		payload := map[string]json.RawMessage{}
		_ = json.Unmarshal(c.Payload, &payload)
		for k, v := range req.Payload {
			payload[k] = v
		}
		if c.Payload, c.Assistant, err = s.checkPayload(ctx, owner, payload); err != nil {
			return err
		}
		if m, ok := req.Payload["metadata"]; ok {
			c.Metadata = m
		}
	}
	c.Updated = now
	if _, err := s.records.exec(ctx, `UPDATE loom_crons SET assistant = ?, schedule = ?, payload = ?, metadata = ?, on_completed = ?, end_time = ?, enabled = ?, next_run = ?, updated = ? WHERE id = ? AND owner = ?`,
		c.Assistant, c.Schedule, string(c.Payload), string(c.Metadata), c.OnCompleted, msOrZero(c.EndTime), boolInt(c.Enabled), ms(c.NextRun), ms(c.Updated), c.ID, owner); err != nil {
		return fmt.Errorf("update cron %s: %w", c.ID, err)
	}
	writeJSON(w, http.StatusOK, c.json())
	return nil
}

func (s *Server) deleteCron(w http.ResponseWriter, r *http.Request, owner string) error {
	id := r.PathValue("id")
	res, err := s.records.exec(r.Context(), `DELETE FROM loom_crons WHERE id = ? AND owner = ?`, id, owner)
	if err != nil {
		return fmt.Errorf("delete cron %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errorf(http.StatusNotFound, "not_found", "cron %s not found", id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cronSearch is the body of POST /runs/crons/search and /count.
type cronSearch struct {
	AssistantID string   `json:"assistant_id"`
	ThreadID    string   `json:"thread_id"`
	Enabled     *bool    `json:"enabled"`
	SortBy      string   `json:"sort_by"`
	SortOrder   string   `json:"sort_order"`
	Select      []string `json:"select"`
	page
}

var (
	cronSorts   = []string{"cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date"}
	cronSelects = []string{"cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled"}
)

func (q *cronSearch) where(owner string) (string, []any) {
	where, args := ` WHERE owner = ?`, []any{owner}
	if q.AssistantID != "" {
		where, args = where+` AND assistant = ?`, append(args, q.AssistantID)
	}
	if q.ThreadID != "" {
		where, args = where+` AND thread = ?`, append(args, q.ThreadID)
	}
	if q.Enabled != nil {
		where, args = where+` AND enabled = ?`, append(args, boolInt(*q.Enabled))
	}
	return where, args
}

func (s *Server) readCronSearch(r *http.Request) (*cronSearch, error) {
	var q cronSearch
	if err := decodeKnown(r, "cron search", &q); err != nil {
		return nil, err
	}
	if err := q.page.check(); err != nil {
		return nil, err
	}
	for _, err := range []error{oneOf("sort_by", q.SortBy, cronSorts...), oneOf("sort_order", q.SortOrder, "asc", "desc")} {
		if err != nil {
			return nil, err
		}
	}
	for _, f := range q.Select {
		if err := oneOf("select", f, cronSelects...); err != nil || f == "" {
			return nil, invalidParameter("select", fmt.Sprintf("%q", f), "fields among "+strings.Join(cronSelects, ", "))
		}
	}
	return &q, nil
}

func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request, owner string) error {
	q, err := s.readCronSearch(r)
	if err != nil {
		return err
	}
	col := map[string]string{"cron_id": "id", "assistant_id": "assistant", "thread_id": "thread", "updated_at": "updated", "next_run_date": "next_run"}[q.SortBy]
	if col == "" {
		col = "created"
	}
	dir := " DESC"
	if q.SortOrder == "asc" {
		dir = " ASC"
	}
	where, args := q.where(owner)
	args = append(args, q.Limit, q.Offset)
	rows, err := s.db.SQL().QueryContext(r.Context(), s.records.q(`SELECT `+cronCols+` FROM loom_crons`+where+` ORDER BY `+col+dir+`, id`+dir+` LIMIT ? OFFSET ?`), args...)
	if err != nil {
		return fmt.Errorf("search crons: %w", err)
	}
	defer rows.Close()
	out := []any{}
	for rows.Next() {
		c, err := scanCron(rows)
		if err != nil {
			return fmt.Errorf("search crons: %w", err)
		}
		out = append(out, selectFields(c.json(), q.Select))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search crons: %w", err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// selectFields is v with only the fields named (all of them for none).
func selectFields(v any, fields []string) any {
	if len(fields) == 0 {
		return v
	}
	var all map[string]json.RawMessage
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &all)
	out := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		if x, ok := all[f]; ok {
			out[f] = x
		}
	}
	return out
}

func (s *Server) countCrons(w http.ResponseWriter, r *http.Request, owner string) error {
	q, err := s.readCronSearch(r)
	if err != nil {
		return err
	}
	where, args := q.where(owner)
	var n int
	if err := s.db.SQL().QueryRowContext(r.Context(), s.records.q(`SELECT count(*) FROM loom_crons`+where), args...).Scan(&n); err != nil {
		return fmt.Errorf("count crons: %w", err)
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

// fireCrons starts the runs of the crons that are due. Each cron is
// claimed first, by moving its next run on from the time read: of the
// servers that read it due, one claims it; the others find it moved and
// leave it. A claimed cron whose run could not start (a busy thread with
// strategy reject, a quota) skips that tick, with a warning in the log.
func (s *Server) fireCrons(ctx context.Context) error {
	now := time.Now().UTC()
	rows, err := s.db.SQL().QueryContext(ctx, s.records.q(`SELECT `+cronCols+` FROM loom_crons WHERE enabled = 1 AND next_run <= ? ORDER BY next_run LIMIT ?`), ms(now), maxCronFire)
	if err != nil {
		return fmt.Errorf("read due crons: %w", err)
	}
	var due []*cronRecord
	for rows.Next() {
		c, err := scanCron(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("read due crons: %w", err)
		}
		due = append(due, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read due crons: %w", err)
	}
	for _, c := range due {
		if err := ctx.Err(); err != nil {
			return err
		}
		fire := c.EndTime.IsZero() || !c.NextRun.After(c.EndTime)
		next, enabled := time.Time{}, false
		if sched, err := cronParser.Parse(c.Schedule); err == nil {
			next = sched.Next(now) // after now: ticks missed meanwhile fire once, now
			enabled = fire && !next.IsZero() && (c.EndTime.IsZero() || !next.After(c.EndTime))
		}
		res, err := s.records.exec(ctx, `UPDATE loom_crons SET next_run = ?, enabled = ? WHERE id = ? AND next_run = ? AND enabled = 1`,
			msOrZero(next), boolInt(enabled), c.ID, ms(c.NextRun))
		if err != nil {
			return fmt.Errorf("claim cron %s: %w", c.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 || !fire {
			continue // another server fired it, or its end time passed
		}
		s.fireCron(ctx, c)
	}
	return nil
}

// fireCron starts cron c's run.
func (s *Server) fireCron(ctx context.Context, c *cronRecord) {
	var req runRequest
	err := unmarshalKnown(c.Payload, "run", &req)
	if err == nil {
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(req.Metadata, &meta)
		meta["cron_id"], _ = json.Marshal(c.ID)
		req.Metadata, _ = json.Marshal(meta)
		if c.Thread == "" && c.OnCompleted == "keep" {
			req.OnCompletion = "continue"
		}
		if err = req.checkOptions(); err == nil {
			var r *run
			r, err = s.prepareRun(ctx, c.Thread, c.Owner, &req, []string{"values"})
			if err == nil {
				s.log.Debug("cron fired", "cron", c.ID, "run", r.id, "thread", publicID(r.thread))
				return
			}
		}
	}
	if c.Thread != "" && err != nil && toAPI(err).status == http.StatusNotFound {
		if _, terr := s.thread(ctx, c.Thread, c.Owner); terr != nil && toAPI(terr).status == http.StatusNotFound {
			// Its thread is gone: so is the cron.
			if _, derr := s.records.exec(ctx, `DELETE FROM loom_crons WHERE id = ?`, c.ID); derr == nil {
				s.log.Info("cron deleted: its thread is gone", "cron", c.ID, "thread", c.Thread)
				return
			}
		}
	}
	s.log.Warn("cron run not started; the cron goes on at its next tick", "cron", c.ID, "err", err)
}

// cronTables is the crons' table, in the migration of crons, webhooks
// and thread TTLs (see backgroundMigrations).
const cronTables = `
CREATE TABLE loom_crons (
	id           text    NOT NULL PRIMARY KEY,
	owner        text    NOT NULL,
	assistant    text    NOT NULL,
	thread       text    NOT NULL,
	schedule     text    NOT NULL,
	payload      text    NOT NULL,
	metadata     text    NOT NULL,
	on_completed text    NOT NULL,
	end_time     bigint  NOT NULL,
	enabled      integer NOT NULL,
	next_run     bigint  NOT NULL,
	created      bigint  NOT NULL,
	updated      bigint  NOT NULL
);
CREATE INDEX loom_crons_owner ON loom_crons (owner, created);
CREATE INDEX loom_crons_due ON loom_crons (next_run) WHERE enabled = 1;
`
