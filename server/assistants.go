package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/store"
)

// This file keeps the assistants that API keys create (LangGraph API):
// versioned configurations over an agent (the assistant's graph_id). Each
// agent is also an assistant of its own, built in and read-only. An API
// key sees only the assistants it created, as with threads.

// assistantComponent names the assistants' tables among the database's
// migrations (no agent name holds "/").
const assistantComponent = "server/assistants"

// assistantMigrations are the assistants' tables: every version of each,
// and which version is its latest.
var assistantMigrations = []store.Migration{{
	Version: 1, Name: "assistants and their versions",
	SQL: `
CREATE TABLE loom_assistants (
	owner    text   NOT NULL,
	id       text   NOT NULL,
	latest   bigint NOT NULL,
	created  bigint NOT NULL,
	updated  bigint NOT NULL,
	PRIMARY KEY (owner, id)
);
CREATE TABLE loom_assistant_versions (
	owner       text   NOT NULL,
	id          text   NOT NULL,
	version     bigint NOT NULL,
	graph_id    text   NOT NULL,
	name        text   NOT NULL,
	description text   NOT NULL,
	config      text   NOT NULL,
	context     text   NOT NULL,
	metadata    text   NOT NULL,
	created     bigint NOT NULL,
	PRIMARY KEY (owner, id, version)
);
`,
}, {
	Version: 2, Name: "the assistant each run was started with",
	SQL: `
CREATE TABLE loom_run_assistants (
	run       text NOT NULL PRIMARY KEY,
	assistant text NOT NULL
);
`,
}}

// migrateAssistants creates or upgrades the assistants' tables.
func migrateAssistants(ctx context.Context, db *store.DB) error {
	if err := db.Migrate(ctx, assistantComponent, assistantMigrations); err != nil {
		return fmt.Errorf("assistant tables: %w", err)
	}
	return nil
}

// Limits of what an assistant holds.
const (
	maxAssistantID    = 128
	maxAssistantField = 64 << 10 // bytes of its config, context, metadata, name or description
	maxVersions       = 1000
	maxAssistants     = 1000 // per API key
)

// assistantVersion is one version of a created assistant, as stored.
type assistantVersion struct {
	owner, id   string
	version     int
	graphID     string
	name        string
	description string
	config      json.RawMessage
	context     json.RawMessage
	metadata    json.RawMessage
	created     time.Time
}

const assistantVersionCols = `owner, id, version, graph_id, name, description, config, context, metadata, created`

func scanAssistantVersion(row scanner) (*assistantVersion, error) {
	var v assistantVersion
	var config, context, metadata string
	var created int64
	if err := row.Scan(&v.owner, &v.id, &v.version, &v.graphID, &v.name, &v.description, &config, &context, &metadata, &created); err != nil {
		return nil, err
	}
	v.config, v.context, v.metadata, v.created = json.RawMessage(config), json.RawMessage(context), json.RawMessage(metadata), fromMS(created)
	return &v, nil
}

// json is v in the LangGraph API's shape; updated is when its latest
// version was chosen.
func (v *assistantVersion) json(updated time.Time) lgAssistant {
	var config, context, metadata map[string]any
	_ = json.Unmarshal(v.config, &config)
	_ = json.Unmarshal(v.context, &context)
	_ = json.Unmarshal(v.metadata, &metadata)
	return lgAssistant{AssistantID: v.id, GraphID: v.graphID, Name: v.name, Description: v.description,
		Config: orEmptyAny(config), Context: orEmptyAny(context), Metadata: orEmptyAny(metadata),
		Version: v.version, CreatedAt: v.created, UpdatedAt: updated}
}

func orEmptyAny(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// latestAssistant is owner's assistant id at its latest version, with
// when that was chosen; ErrNotFound when owner has none called id.
func (s *records) latestAssistant(ctx context.Context, owner, id string) (*assistantVersion, time.Time, error) {
	row := s.db.SQL().QueryRowContext(ctx, s.q(`SELECT v.owner, v.id, v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata, v.created, a.updated
FROM loom_assistants a JOIN loom_assistant_versions v ON v.owner = a.owner AND v.id = a.id AND v.version = a.latest
WHERE a.owner = ? AND a.id = ?`), owner, id)
	var v assistantVersion
	var config, context, metadata string
	var created, updated int64
	err := row.Scan(&v.owner, &v.id, &v.version, &v.graphID, &v.name, &v.description, &config, &context, &metadata, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read assistant %s: %w", id, err)
	}
	v.config, v.context, v.metadata, v.created = json.RawMessage(config), json.RawMessage(context), json.RawMessage(metadata), fromMS(created)
	return &v, fromMS(updated), nil
}

// listAssistants is owner's assistants at their latest versions, newest
// first.
func (s *records) listAssistants(ctx context.Context, owner string) ([]lgAssistant, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT v.owner, v.id, v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata, v.created, a.updated
FROM loom_assistants a JOIN loom_assistant_versions v ON v.owner = a.owner AND v.id = a.id AND v.version = a.latest
WHERE a.owner = ? ORDER BY a.created DESC, a.id`), owner)
	if err != nil {
		return nil, fmt.Errorf("list assistants: %w", err)
	}
	defer rows.Close()
	var out []lgAssistant
	for rows.Next() {
		var v assistantVersion
		var config, context, metadata string
		var created, updated int64
		if err := rows.Scan(&v.owner, &v.id, &v.version, &v.graphID, &v.name, &v.description, &config, &context, &metadata, &created, &updated); err != nil {
			return nil, fmt.Errorf("list assistants: %w", err)
		}
		v.config, v.context, v.metadata, v.created = json.RawMessage(config), json.RawMessage(context), json.RawMessage(metadata), fromMS(created)
		out = append(out, v.json(fromMS(updated)))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list assistants: %w", err)
	}
	return out, nil
}

// assistantVersions is the versions of owner's assistant id, newest first.
func (s *records) assistantVersions(ctx context.Context, owner, id string) ([]*assistantVersion, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT `+assistantVersionCols+` FROM loom_assistant_versions WHERE owner = ? AND id = ? ORDER BY version DESC`), owner, id)
	if err != nil {
		return nil, fmt.Errorf("list versions of assistant %s: %w", id, err)
	}
	defer rows.Close()
	var out []*assistantVersion
	for rows.Next() {
		v, err := scanAssistantVersion(rows)
		if err != nil {
			return nil, fmt.Errorf("list versions of assistant %s: %w", id, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// putAssistantVersion stores v as the latest version of its assistant:
// version 1 creates the assistant (ErrExists when its id is taken).
func (s *records) putAssistantVersion(ctx context.Context, v *assistantVersion) error {
	now := ms(v.created)
	return s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if v.version == 1 {
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM loom_assistants WHERE owner = ?`), v.owner).Scan(&n); err != nil {
				return fmt.Errorf("count assistants: %w", err)
			}
			if n >= maxAssistants {
				return errorf(http.StatusUnprocessableEntity, "too_many_assistants", "this key has %d assistants, the most it may have; delete one first", n)
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO loom_assistants (owner, id, latest, created, updated) VALUES (?, ?, 1, ?, ?)`), v.owner, v.id, now, now); err != nil {
				if store.IsUnique(err) {
					return fmt.Errorf("create assistant %s: %w", v.id, ErrExists)
				}
				return fmt.Errorf("create assistant %s: %w", v.id, err)
			}
		} else {
			res, err := tx.ExecContext(ctx, s.q(`UPDATE loom_assistants SET latest = ?, updated = ? WHERE owner = ? AND id = ? AND latest = ?`), v.version, now, v.owner, v.id, v.version-1)
			if err != nil {
				return fmt.Errorf("update assistant %s: %w", v.id, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return errorf(http.StatusConflict, "conflict", "assistant %s changed meanwhile; read it and try again", v.id)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO loom_assistant_versions (`+assistantVersionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			v.owner, v.id, v.version, v.graphID, v.name, v.description, string(orEmptyObject(v.config)), string(orEmptyObject(v.context)), string(orEmptyObject(v.metadata)), now); err != nil {
			if store.IsUnique(err) {
				return errorf(http.StatusConflict, "conflict", "assistant %s changed meanwhile; read it and try again", v.id)
			}
			return fmt.Errorf("store assistant %s version %d: %w", v.id, v.version, err)
		}
		return nil
	})
}

// setLatestAssistant makes version the latest of owner's assistant id.
func (s *records) setLatestAssistant(ctx context.Context, owner, id string, version int) error {
	return s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM loom_assistant_versions WHERE owner = ? AND id = ? AND version = ?`), owner, id, version).Scan(&n); err != nil {
			return fmt.Errorf("set the latest version of assistant %s: %w", id, err)
		}
		if n == 0 {
			return errorf(http.StatusNotFound, "not_found", "assistant %s has no version %d", id, version)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE loom_assistants SET latest = ?, updated = ? WHERE owner = ? AND id = ?`), version, ms(time.Now()), owner, id); err != nil {
			return fmt.Errorf("set the latest version of assistant %s: %w", id, err)
		}
		return nil
	})
}

// deleteAssistant deletes owner's assistant id and all its versions.
func (s *records) deleteAssistant(ctx context.Context, owner, id string) error {
	return s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM loom_assistants WHERE owner = ? AND id = ?`), owner, id)
		if err != nil {
			return fmt.Errorf("delete assistant %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("assistant %s: %w", id, ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM loom_assistant_versions WHERE owner = ? AND id = ?`), owner, id); err != nil {
			return fmt.Errorf("delete assistant %s: %w", id, err)
		}
		return nil
	})
}

// validAssistantID is the check of an id a client chose.
func validAssistantID(id string) error {
	if id == "" || len(id) > maxAssistantID || strings.IndexFunc(id, func(c rune) bool {
		return !(c == '-' || c == '_' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c))
	}) >= 0 {
		return invalidParameter("assistant_id", fmt.Sprintf("%q", id), fmt.Sprintf("letters, digits, '-', '_' or '.', at most %d bytes", maxAssistantID))
	}
	return nil
}

// assistantFields checks the parts of an assistant a request sets, which
// hold at most maxAssistantField bytes each; config and context are
// checked against the agent's ConfigSchema.
func assistantFields(a *builtAgent, name, description string, config, context, metadata json.RawMessage) error {
	for _, f := range []struct {
		what string
		n    int
	}{{"name", len(name)}, {"description", len(description)}, {"config", len(config)}, {"context", len(context)}, {"metadata", len(metadata)}} {
		if f.n > maxAssistantField {
			return errorf(http.StatusUnprocessableEntity, "too_large", "%s: at most %d bytes, not %d", f.what, maxAssistantField, f.n)
		}
	}
	if present(metadata) {
		var m map[string]json.RawMessage
		if json.Unmarshal(metadata, &m) != nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_metadata", "metadata must be a JSON object")
		}
		if err := checkMetadata(m); err != nil {
			return err
		}
	}
	_, err := assistantLayers(a, config, context)
	return err
}

// assistantLayers checks an assistant's config and context against
// agent a and returns them as the first layers of a run's configuration.
func assistantLayers(a *builtAgent, config, context json.RawMessage) ([]map[string]json.RawMessage, error) {
	c, err := configurable("config", config)
	if err != nil {
		return nil, err
	}
	x, err := contextObject("context", context)
	if err != nil {
		return nil, err
	}
	if _, err := mergeConfig(a, c, x); err != nil {
		return nil, err
	}
	return []map[string]json.RawMessage{c, x}, nil
}

// mergeObjects is patch's keys over base's, both JSON objects.
func mergeObjects(base, patch json.RawMessage) json.RawMessage {
	var b, p map[string]json.RawMessage
	_ = json.Unmarshal(base, &b)
	_ = json.Unmarshal(patch, &p)
	if b == nil {
		b = map[string]json.RawMessage{}
	}
	maps.Copy(b, p)
	out, _ := json.Marshal(b)
	return out
}

// newAssistantID is the id of an assistant the client named none for.
func newAssistantID() string { return checkpoint.NewID() }

// putRunAssistant records that run was started with assistant, one a key
// created (a run of an agent's own assistant records nothing: its
// assistant is its agent).
func (s *records) putRunAssistant(ctx context.Context, run, assistant string) error {
	if _, err := s.exec(ctx, `INSERT INTO loom_run_assistants (run, assistant) VALUES (?, ?)`, run, assistant); err != nil {
		return fmt.Errorf("record the assistant of run %s: %w", run, err)
	}
	return nil
}

// fillRunAssistants sets the Assistant of each of recs started with an
// assistant a key created; the others' stays empty (their agent's own).
func (s *records) fillRunAssistants(ctx context.Context, recs ...*RunRecord) error {
	var ids []string
	for _, r := range recs {
		if r.Assistant == "" {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// One parameter, a JSON array, however many runs there are.
	list, _ := json.Marshal(ids)
	q := `SELECT run, assistant FROM loom_run_assistants WHERE run IN (SELECT value FROM json_each(?))`
	if s.d == store.Postgres {
		q = `SELECT run, assistant FROM loom_run_assistants WHERE run IN (SELECT jsonb_array_elements_text(?::jsonb))`
	}
	rows, err := s.db.SQL().QueryContext(ctx, s.q(q), string(list))
	if err != nil {
		return fmt.Errorf("read the assistants of runs: %w", err)
	}
	defer rows.Close()
	byRun := map[string]string{}
	for rows.Next() {
		var run, assistant string
		if err := rows.Scan(&run, &assistant); err != nil {
			return fmt.Errorf("read the assistants of runs: %w", err)
		}
		byRun[run] = assistant
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the assistants of runs: %w", err)
	}
	for _, r := range recs {
		if a, ok := byRun[r.ID]; ok {
			r.Assistant = a
		}
	}
	return nil
}

// assistantThreadMetadata is the metadata a run of assistant id gives
// the thread it creates, when id is an assistant a key created: its
// assistant_id names it (agentMetadata adds graph_id, the agent), so
// that deleting the assistant with delete_threads finds the thread.
func assistantThreadMetadata(a *builtAgent, id string) json.RawMessage {
	if id == a.Name {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"assistant_id": id})
	return b
}
