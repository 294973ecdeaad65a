package schedule

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/store"
)

// Migrations are the agent's tables on Loom's database, beside the
// checkpoints. The SQL is portable (SQLite and Postgres): plain types,
// composite keys, booleans as 0/1, and one INSERT … ON CONFLICT DO
// NOTHING (both have it) for a new owner's window. Version 1 keeps IF NOT
// EXISTS so that a database whose tables an older build made is adopted
// as it is.
var Migrations = []store.Migration{{
	Version: 1,
	Name:    "windows, events, task classes and items, constraints, step commits",
	SQL: `CREATE TABLE IF NOT EXISTS schedule_windows (
	owner      TEXT    NOT NULL PRIMARY KEY,
	start_week INTEGER NOT NULL,
	start_day  INTEGER NOT NULL,
	days       INTEGER NOT NULL,
	daily_max  INTEGER NOT NULL,
	revision   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS schedule_events (
	owner       TEXT    NOT NULL,
	id          INTEGER NOT NULL,
	name        TEXT    NOT NULL,
	week        INTEGER NOT NULL,
	day_of_week INTEGER NOT NULL,
	start_slot  INTEGER NOT NULL,
	slots       INTEGER NOT NULL,
	locked      INTEGER NOT NULL,
	can_embed   INTEGER NOT NULL,
	PRIMARY KEY (owner, id)
);
CREATE TABLE IF NOT EXISTS schedule_task_classes (
	owner         TEXT    NOT NULL,
	id            INTEGER NOT NULL,
	name          TEXT    NOT NULL,
	subject       TEXT    NOT NULL,
	difficulty    INTEGER NOT NULL,
	prefer        TEXT    NOT NULL,
	excluded_days TEXT    NOT NULL,
	strategy      TEXT    NOT NULL,
	PRIMARY KEY (owner, id)
);
CREATE TABLE IF NOT EXISTS schedule_task_items (
	owner       TEXT    NOT NULL,
	id          INTEGER NOT NULL,
	class_id    INTEGER NOT NULL,
	name        TEXT    NOT NULL,
	slots       INTEGER NOT NULL,
	status      TEXT    NOT NULL,
	week        INTEGER,
	day_of_week INTEGER,
	start_slot  INTEGER,
	PRIMARY KEY (owner, id)
);
-- The times each owner wants kept free, as JSON ([]Avoid): they hold
-- across threads until the owner changes them.
CREATE TABLE IF NOT EXISTS schedule_constraints (
	owner TEXT NOT NULL PRIMARY KEY,
	avoid TEXT NOT NULL
);
-- One row per committed step of a graph run (graph.StepKey), so a step
-- that runs again after a crash does not apply its change twice.
CREATE TABLE IF NOT EXISTS schedule_commits (
	owner    TEXT    NOT NULL,
	step_key TEXT    NOT NULL,
	revision INTEGER NOT NULL,
	result   TEXT    NOT NULL,
	PRIMARY KEY (owner, step_key)
);
`,
}}

// ErrNoSchedule is returned by Load for an owner with no schedule.
var ErrNoSchedule = errors.New("schedule: owner has no schedule")

// Store keeps schedules on Loom's database (a *store.DB), beside the
// checkpoints, in the tables of Migrations: it reads through the
// database's SQL and writes through its Write (the group commit on
// SQLite, retried transactions on Postgres). It is safe for concurrent
// use; commits are serialised by the schedule's revision.
type Store struct {
	db *store.DB
}

// NewStore keeps schedules on db, whose Migrations must have been
// applied (db.Migrate; the server does it before it builds the agent).
// The store does not own db: the caller closes it.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// q rewrites ? placeholders for the database's dialect.
func (st *Store) q(query string) string { return st.db.Dialect().Rebind(query) }

// EnsureSample creates the sample schedule for owner if the owner has
// none, and reports whether it did. Calls for one owner that race (an
// API key's first runs, at once) make it once, and none fails.
func (st *Store) EnsureSample(ctx context.Context, owner string) (bool, error) {
	var n int
	if err := st.db.SQL().QueryRowContext(ctx, st.q(`SELECT count(*) FROM schedule_windows WHERE owner = ?`), owner).Scan(&n); err != nil {
		return false, fmt.Errorf("schedule store: look for %s's schedule: %w", owner, err)
	}
	if n > 0 {
		return false, nil
	}
	return st.create(ctx, Sample(owner), true)
}

// create stores a new schedule for s.Owner, in one transaction, and
// reports whether it did: with ifAbsent, an owner who has a schedule
// keeps it (found by the window's insert, which waits for a concurrent
// one to commit), else that fails.
func (st *Store) create(ctx context.Context, s *Schedule, ifAbsent bool) (bool, error) {
	made := false
	err := st.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		made = false
		w := s.Window
		insert := `INSERT INTO schedule_windows (owner, start_week, start_day, days, daily_max, revision) VALUES (?, ?, ?, ?, ?, ?)`
		if ifAbsent {
			insert += ` ON CONFLICT (owner) DO NOTHING`
		}
		res, err := tx.ExecContext(ctx, st.q(insert), s.Owner, w.StartWeek, w.StartDay, w.Days, w.DailyMax, s.Revision)
		if err != nil {
			return fmt.Errorf("window: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("window: %w", err)
		} else if n == 0 {
			return nil // made meanwhile by another call
		}
		var changes []rowChange
		for i := range s.Events {
			changes = append(changes, rowChange{insert: true, event: &s.Events[i]})
		}
		for i := range s.Classes {
			changes = append(changes, rowChange{insert: true, class: &s.Classes[i]})
		}
		for i := range s.Items {
			changes = append(changes, rowChange{insert: true, item: &s.Items[i]})
		}
		if err := st.write(ctx, tx, s.Owner, w, changes); err != nil {
			return err
		}
		made = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("schedule store: create %s: %w", s.Owner, err)
	}
	return made, nil
}

// Load reads owner's schedule. Events and items outside the window are
// left out (and left alone by commits).
func (st *Store) Load(ctx context.Context, owner string) (*Schedule, error) {
	tx, err := st.db.SQL().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("schedule store: load %s: %w", owner, err)
	}
	defer tx.Rollback()
	s := &Schedule{Owner: owner}
	w := &s.Window
	err = tx.QueryRowContext(ctx, st.q(`SELECT start_week, start_day, days, daily_max, revision FROM schedule_windows WHERE owner = ?`), owner).
		Scan(&w.StartWeek, &w.StartDay, &w.Days, &w.DailyMax, &s.Revision)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("schedule store: load %s: %w", owner, ErrNoSchedule)
	}
	if err != nil {
		return nil, fmt.Errorf("schedule store: load %s: window: %w", owner, err)
	}
	if err := st.loadRows(ctx, tx, s); err != nil {
		return nil, fmt.Errorf("schedule store: load %s: %w", owner, err)
	}
	s.sortAll()
	return s, nil
}

func (st *Store) loadRows(ctx context.Context, tx *sql.Tx, s *Schedule) error {
	each := func(query string, scan func(*sql.Rows) error) error {
		rows, err := tx.QueryContext(ctx, st.q(query), s.Owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	err := each(`SELECT id, name, week, day_of_week, start_slot, slots, locked, can_embed FROM schedule_events WHERE owner = ?`, func(r *sql.Rows) error {
		var e Event
		var d DayRef
		var locked, embed int
		if err := r.Scan(&e.ID, &e.Name, &d.Week, &d.DayOfWeek, &e.Start, &e.Slots, &locked, &embed); err != nil {
			return fmt.Errorf("events: %w", err)
		}
		var in bool
		if e.Day, in = s.Window.Index(d); in {
			e.Locked, e.CanEmbed = locked != 0, embed != 0
			s.Events = append(s.Events, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = each(`SELECT id, name, subject, difficulty, prefer, excluded_days, strategy FROM schedule_task_classes WHERE owner = ?`, func(r *sql.Rows) error {
		var c TaskClass
		var excluded string
		if err := r.Scan(&c.ID, &c.Name, &c.Profile.Subject, &c.Profile.Difficulty, &c.Profile.Prefer, &excluded, &c.Strategy); err != nil {
			return fmt.Errorf("task classes: %w", err)
		}
		for _, f := range strings.Split(excluded, ",") {
			if d, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
				c.ExcludedDays = append(c.ExcludedDays, d)
			}
		}
		s.Classes = append(s.Classes, c)
		return nil
	})
	if err != nil {
		return err
	}
	return each(`SELECT id, class_id, name, slots, status, week, day_of_week, start_slot FROM schedule_task_items WHERE owner = ?`, func(r *sql.Rows) error {
		var it Item
		var week, dow, start sql.NullInt64
		if err := r.Scan(&it.ID, &it.Class, &it.Name, &it.Slots, &it.Status, &week, &dow, &start); err != nil {
			return fmt.Errorf("task items: %w", err)
		}
		if it.Placed() {
			day, in := s.Window.Index(DayRef{Week: int(week.Int64), DayOfWeek: int(dow.Int64)})
			if !in {
				return nil
			}
			it.Day, it.Start = day, int(start.Int64)
		}
		s.Items = append(s.Items, it)
		return nil
	})
}

// committed returns the result stored by the commit made under key, if
// there was one.
func (st *Store) committed(ctx context.Context, owner, key string) (string, bool, error) {
	var result string
	err := st.db.SQL().QueryRowContext(ctx, st.q(`SELECT result FROM schedule_commits WHERE owner = ? AND step_key = ?`), owner, key).Scan(&result)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("schedule store: look up commit %s: %w", key, err)
	}
	return result, true, nil
}

// commit writes the difference between before (as loaded) and after in
// one transaction, and bumps the revision. It fails with ErrConflict when
// the stored revision is no longer before's. With a key (graph.StepKey) it
// also records result under it, so committed finds it. It sets
// after.Revision to the new revision.
func (st *Store) commit(ctx context.Context, before, after *Schedule, key, result string) error {
	changes, err := diff(before, after)
	if err != nil {
		return fmt.Errorf("schedule store: commit %s: %w", before.Owner, err)
	}
	err = st.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, st.q(`UPDATE schedule_windows SET revision = revision + 1 WHERE owner = ? AND revision = ?`), before.Owner, before.Revision)
		if err != nil {
			return fmt.Errorf("revision: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("at revision %d: %w", before.Revision, ErrConflict)
		}
		if err := st.write(ctx, tx, before.Owner, before.Window, changes); err != nil {
			return err
		}
		if key != "" {
			if _, err := tx.ExecContext(ctx, st.q(`INSERT INTO schedule_commits (owner, step_key, revision, result) VALUES (?, ?, ?, ?)`),
				before.Owner, key, before.Revision+1, result); err != nil {
				return fmt.Errorf("record step %s: %w", key, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("schedule store: commit %s: %w", before.Owner, err)
	}
	after.Revision = before.Revision + 1
	return nil
}

// rowChange is one row to write: an insert or an update of an event, a class
// or an item.
type rowChange struct {
	insert bool
	event  *Event
	class  *TaskClass
	item   *Item
}

// diff lists the rows that differ between two versions of a schedule.
// Nothing may be deleted.
func diff(before, after *Schedule) ([]rowChange, error) {
	events, goneEvents := changed(before.Events, after.Events, func(e *Event) int { return e.ID },
		func(a, b *Event) bool { return *a == *b }, func(insert bool, e *Event) rowChange { return rowChange{insert: insert, event: e} })
	classes, goneClasses := changed(before.Classes, after.Classes, func(c *TaskClass) int { return c.ID },
		func(a, b *TaskClass) bool { return reflect.DeepEqual(*a, *b) }, func(insert bool, c *TaskClass) rowChange { return rowChange{insert: insert, class: c} })
	items, goneItems := changed(before.Items, after.Items, func(it *Item) int { return it.ID },
		func(a, b *Item) bool { return *a == *b }, func(insert bool, it *Item) rowChange { return rowChange{insert: insert, item: it} })
	if goneEvents+goneClasses+goneItems > 0 {
		return nil, errors.New("deleting events, classes or items is not supported")
	}
	return slices.Concat(events, classes, items), nil
}

// changed lists the rows of after that are new or differ from before's
// row with the same id, and counts before's rows gone from after.
func changed[T any](before, after []T, id func(*T) int, same func(a, b *T) bool, row func(insert bool, v *T) rowChange) (out []rowChange, gone int) {
	old := make(map[int]*T, len(before))
	for i := range before {
		old[id(&before[i])] = &before[i]
	}
	for i := range after {
		v := &after[i]
		o, ok := old[id(v)]
		if !ok || !same(o, v) {
			out = append(out, row(!ok, v))
		}
		delete(old, id(v))
	}
	return out, len(old)
}

// write applies changes in tx.
func (st *Store) write(ctx context.Context, tx *sql.Tx, owner string, w Window, changes []rowChange) error {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for _, c := range changes {
		var query string
		var args []any
		switch {
		case c.event != nil:
			e, d := c.event, w.Day(c.event.Day)
			args = []any{e.Name, d.Week, d.DayOfWeek, e.Start, e.Slots, b(e.Locked), b(e.CanEmbed), owner, e.ID}
			query = `UPDATE schedule_events SET name = ?, week = ?, day_of_week = ?, start_slot = ?, slots = ?, locked = ?, can_embed = ? WHERE owner = ? AND id = ?`
			if c.insert {
				query = `INSERT INTO schedule_events (name, week, day_of_week, start_slot, slots, locked, can_embed, owner, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
			}
		case c.class != nil:
			cl := c.class
			days := make([]string, len(cl.ExcludedDays))
			for i, d := range cl.ExcludedDays {
				days[i] = strconv.Itoa(d)
			}
			args = []any{cl.Name, cl.Profile.Subject, cl.Profile.Difficulty, cl.Profile.Prefer, strings.Join(days, ","), cl.Strategy, owner, cl.ID}
			query = `UPDATE schedule_task_classes SET name = ?, subject = ?, difficulty = ?, prefer = ?, excluded_days = ?, strategy = ? WHERE owner = ? AND id = ?`
			if c.insert {
				query = `INSERT INTO schedule_task_classes (name, subject, difficulty, prefer, excluded_days, strategy, owner, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
			}
		default:
			it := c.item
			var week, dow, start any
			if it.Placed() {
				d := w.Day(it.Day)
				week, dow, start = d.Week, d.DayOfWeek, it.Start
			}
			args = []any{it.Class, it.Name, it.Slots, it.Status, week, dow, start, owner, it.ID}
			query = `UPDATE schedule_task_items SET class_id = ?, name = ?, slots = ?, status = ?, week = ?, day_of_week = ?, start_slot = ? WHERE owner = ? AND id = ?`
			if c.insert {
				query = `INSERT INTO schedule_task_items (class_id, name, slots, status, week, day_of_week, start_slot, owner, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
			}
		}
		if _, err := tx.ExecContext(ctx, st.q(query), args...); err != nil {
			return fmt.Errorf("write %s: %w", tableOf(query), err)
		}
	}
	return nil
}

func tableOf(query string) string {
	for _, f := range strings.Fields(query) {
		if strings.HasPrefix(f, "schedule_") {
			return f
		}
	}
	return ""
}

// constraints returns the times owner wants kept free, as last saved; none
// for an owner who never said.
func (st *Store) constraints(ctx context.Context, owner string) ([]Avoid, error) {
	var raw string
	err := st.db.SQL().QueryRowContext(ctx, st.q(`SELECT avoid FROM schedule_constraints WHERE owner = ?`), owner).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("schedule store: read %s's constraints: %w", owner, err)
	}
	var avoid []Avoid
	if err := json.Unmarshal([]byte(raw), &avoid); err != nil {
		return nil, fmt.Errorf("schedule store: read %s's constraints: %w", owner, err)
	}
	return normalizeAvoids(avoid), nil
}

// setConstraints replaces the times owner wants kept free.
func (st *Store) setConstraints(ctx context.Context, owner string, avoid []Avoid) error {
	avoid = normalizeAvoids(avoid)
	if avoid == nil {
		avoid = []Avoid{}
	}
	raw, err := json.Marshal(avoid)
	if err != nil {
		return fmt.Errorf("schedule store: save %s's constraints: %w", owner, err)
	}
	err = st.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, st.q(`DELETE FROM schedule_constraints WHERE owner = ?`), owner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, st.q(`INSERT INTO schedule_constraints (owner, avoid) VALUES (?, ?)`), owner, string(raw))
		return err
	})
	if err != nil {
		return fmt.Errorf("schedule store: save %s's constraints: %w", owner, err)
	}
	return nil
}
