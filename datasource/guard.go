package datasource

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrRefused is what every refusal matches with errors.Is.
var ErrRefused = errors.New("refused")

// RefusedError is a statement the guard refused before anything was sent
// to the database. Reason is one line a model can act on.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return e.Reason }

// Is makes a RefusedError match ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// Denied is a function or clause with side effects, refused even inside a
// SELECT. The list is data (see Denylist) and the tests run every entry's
// Example on its dialects.
type Denied struct {
	// Name is the function's name in lower case, or the clause's keywords
	// in upper case separated by spaces ("FOR UPDATE").
	Name string
	// Clause marks a sequence of keywords rather than a function.
	Clause bool
	// Dialects are where the entry applies.
	Dialects []Dialect
	// Why says what it would do, for the refusal.
	Why string
	// Example is a statement that uses it and must be refused.
	Example string
}

var (
	allDialects = []Dialect{SQLite, Postgres, MySQL}
	onlyPG      = []Dialect{Postgres}
	onlyMy      = []Dialect{MySQL}
	pgAndMy     = []Dialect{Postgres, MySQL}
	deniedFn    = func(name, why, example string, ds ...Dialect) Denied {
		return Denied{Name: name, Dialects: ds, Why: why, Example: example}
	}
)

// Denylist returns every function and clause the guard refuses inside a
// query. The slice is the caller's: changing it changes nothing the guard
// does.
func Denylist() []Denied { return slices.Clone(denylist) }

var denylist = []Denied{
	// Server files.
	deniedFn("pg_read_file", "reads a server file", "SELECT pg_read_file('/etc/passwd')", Postgres),
	deniedFn("pg_read_binary_file", "reads a server file", "SELECT pg_read_binary_file('/etc/passwd')", Postgres),
	deniedFn("pg_ls_dir", "lists a server directory", "SELECT * FROM pg_ls_dir('.')", Postgres),
	deniedFn("pg_stat_file", "reads a server file's status", "SELECT pg_stat_file('postgresql.conf')", Postgres),
	deniedFn("pg_ls_logdir", "lists a server directory", "SELECT * FROM pg_ls_logdir()", Postgres),
	deniedFn("pg_ls_waldir", "lists a server directory", "SELECT * FROM pg_ls_waldir()", Postgres),
	deniedFn("pg_ls_tmpdir", "lists a server directory", "SELECT * FROM pg_ls_tmpdir()", Postgres),
	deniedFn("pg_file_write", "writes a server file", "SELECT pg_file_write('x', 'y', false)", Postgres),
	deniedFn("pg_file_unlink", "removes a server file", "SELECT pg_file_unlink('x')", Postgres),
	deniedFn("pg_file_rename", "renames a server file", "SELECT pg_file_rename('x', 'y')", Postgres),
	deniedFn("load_file", "reads a server file", "SELECT LOAD_FILE('/etc/passwd')", MySQL),
	deniedFn("readfile", "reads a file", "SELECT readfile('/etc/passwd')", SQLite),
	deniedFn("writefile", "writes a file", "SELECT writefile('/tmp/loom-x', 'x')", SQLite),
	deniedFn("edit", "runs an editor", "SELECT edit('x')", SQLite),
	deniedFn("load_extension", "loads native code", "SELECT load_extension('/tmp/x.so')", SQLite),
	deniedFn("fts3_tokenizer", "registers native code", "SELECT fts3_tokenizer('x', X'00')", SQLite),
	// Large objects.
	deniedFn("lo_import", "reads a server file into a large object", "SELECT lo_import('/etc/passwd')", Postgres),
	deniedFn("lo_export", "writes a large object to a server file", "SELECT lo_export(1, '/tmp/loom-x')", Postgres),
	deniedFn("lo_create", "creates a large object", "SELECT lo_create(0)", Postgres),
	deniedFn("lo_creat", "creates a large object", "SELECT lo_creat(-1)", Postgres),
	deniedFn("lo_unlink", "removes a large object", "SELECT lo_unlink(1)", Postgres),
	deniedFn("lo_open", "opens a large object", "SELECT lo_open(1, 131072)", Postgres),
	deniedFn("lo_put", "writes a large object", "SELECT lo_put(1, 0, 'x')", Postgres),
	deniedFn("lo_get", "reads a large object", "SELECT lo_get(1)", Postgres),
	deniedFn("lo_from_bytea", "creates a large object", "SELECT lo_from_bytea(0, 'x')", Postgres),
	deniedFn("lo_truncate", "truncates a large object", "SELECT lo_truncate(0, 0)", Postgres),
	deniedFn("lowrite", "writes a large object", "SELECT lowrite(0, 'x')", Postgres),
	deniedFn("loread", "reads a large object", "SELECT loread(0, 1)", Postgres),
	// Sleeping.
	deniedFn("pg_sleep", "sleeps", "SELECT pg_sleep(60)", Postgres),
	deniedFn("pg_sleep_for", "sleeps", "SELECT pg_sleep_for('1 minute')", Postgres),
	deniedFn("pg_sleep_until", "sleeps", "SELECT pg_sleep_until(now() + interval '1 minute')", Postgres),
	deniedFn("sleep", "sleeps", "SELECT SLEEP(60)", MySQL),
	deniedFn("benchmark", "burns the server's time", "SELECT BENCHMARK(100000000, MD5('x'))", MySQL),
	// Locks.
	deniedFn("pg_advisory_lock", "takes a lock", "SELECT pg_advisory_lock(1)", Postgres),
	deniedFn("pg_advisory_lock_shared", "takes a lock", "SELECT pg_advisory_lock_shared(1)", Postgres),
	deniedFn("pg_advisory_xact_lock", "takes a lock", "SELECT pg_advisory_xact_lock(1)", Postgres),
	deniedFn("pg_advisory_xact_lock_shared", "takes a lock", "SELECT pg_advisory_xact_lock_shared(1)", Postgres),
	deniedFn("pg_try_advisory_lock", "takes a lock", "SELECT pg_try_advisory_lock(1)", Postgres),
	deniedFn("pg_try_advisory_lock_shared", "takes a lock", "SELECT pg_try_advisory_lock_shared(1)", Postgres),
	deniedFn("pg_try_advisory_xact_lock", "takes a lock", "SELECT pg_try_advisory_xact_lock(1)", Postgres),
	deniedFn("pg_try_advisory_xact_lock_shared", "takes a lock", "SELECT pg_try_advisory_xact_lock_shared(1)", Postgres),
	deniedFn("pg_advisory_unlock", "releases a lock", "SELECT pg_advisory_unlock(1)", Postgres),
	deniedFn("pg_advisory_unlock_shared", "releases a lock", "SELECT pg_advisory_unlock_shared(1)", Postgres),
	deniedFn("pg_advisory_unlock_all", "releases locks", "SELECT pg_advisory_unlock_all()", Postgres),
	deniedFn("get_lock", "takes a lock", "SELECT GET_LOCK('x', 10)", MySQL),
	deniedFn("release_lock", "releases a lock", "SELECT RELEASE_LOCK('x')", MySQL),
	deniedFn("release_all_locks", "releases locks", "SELECT RELEASE_ALL_LOCKS()", MySQL),
	{Name: "FOR UPDATE", Clause: true, Dialects: pgAndMy, Why: "locks rows", Example: "SELECT * FROM t FOR UPDATE"},
	{Name: "FOR NO KEY UPDATE", Clause: true, Dialects: onlyPG, Why: "locks rows", Example: "SELECT * FROM t FOR NO KEY UPDATE"},
	{Name: "FOR SHARE", Clause: true, Dialects: pgAndMy, Why: "locks rows", Example: "SELECT * FROM t FOR SHARE"},
	{Name: "FOR KEY SHARE", Clause: true, Dialects: onlyPG, Why: "locks rows", Example: "SELECT * FROM t FOR KEY SHARE"},
	{Name: "LOCK IN SHARE MODE", Clause: true, Dialects: onlyMy, Why: "locks rows", Example: "SELECT * FROM t LOCK IN SHARE MODE"},
	// Sequences.
	deniedFn("nextval", "advances a sequence", "SELECT nextval('s')", Postgres, MySQL),
	deniedFn("setval", "sets a sequence", "SELECT setval('s', 1)", Postgres, MySQL),
	deniedFn("lastval", "reads the session's sequence state", "SELECT lastval()", Postgres, MySQL),
	// Settings and session state.
	deniedFn("set_config", "changes a setting", "SELECT set_config('statement_timeout', '0', false)", Postgres),
	{Name: ":=", Clause: true, Dialects: onlyMy, Why: "assigns a variable", Example: "SELECT @x := 1"},
	deniedFn("txid_current", "starts a write transaction", "SELECT txid_current()", Postgres),
	deniedFn("pg_current_xact_id", "starts a write transaction", "SELECT pg_current_xact_id()", Postgres),
	deniedFn("pg_export_snapshot", "exports a snapshot", "SELECT pg_export_snapshot()", Postgres),
	deniedFn("pg_notify", "signals listeners", "SELECT pg_notify('c', 'x')", Postgres),
	deniedFn("pg_logical_emit_message", "writes to the WAL", "SELECT pg_logical_emit_message(true, 'x', 'y')", Postgres),
	deniedFn("pg_stat_reset", "resets statistics", "SELECT pg_stat_reset()", Postgres),
	// Signalling and administering the server.
	deniedFn("pg_cancel_backend", "signals a backend", "SELECT pg_cancel_backend(1)", Postgres),
	deniedFn("pg_terminate_backend", "signals a backend", "SELECT pg_terminate_backend(1)", Postgres),
	deniedFn("pg_reload_conf", "signals the server", "SELECT pg_reload_conf()", Postgres),
	deniedFn("pg_rotate_logfile", "signals the server", "SELECT pg_rotate_logfile()", Postgres),
	deniedFn("pg_switch_wal", "switches the WAL", "SELECT pg_switch_wal()", Postgres),
	deniedFn("pg_create_restore_point", "writes to the WAL", "SELECT pg_create_restore_point('x')", Postgres),
	deniedFn("pg_promote", "promotes a standby", "SELECT pg_promote()", Postgres),
	deniedFn("pg_create_logical_replication_slot", "creates a replication slot", "SELECT pg_create_logical_replication_slot('x', 'pgoutput')", Postgres),
	deniedFn("pg_create_physical_replication_slot", "creates a replication slot", "SELECT pg_create_physical_replication_slot('x')", Postgres),
	deniedFn("pg_drop_replication_slot", "drops a replication slot", "SELECT pg_drop_replication_slot('x')", Postgres),
	deniedFn("master_pos_wait", "waits on replication", "SELECT MASTER_POS_WAIT('x', 1)", MySQL),
	deniedFn("source_pos_wait", "waits on replication", "SELECT SOURCE_POS_WAIT('x', 1)", MySQL),
	deniedFn("wait_for_executed_gtid_set", "waits on replication", "SELECT WAIT_FOR_EXECUTED_GTID_SET('x', 1)", MySQL),
	// Running other SQL: remote links and queries in strings.
	deniedFn("dblink", "runs SQL on another server", "SELECT * FROM dblink('host=x', 'DELETE FROM t') AS r(x int)", Postgres),
	deniedFn("dblink_exec", "runs SQL on another server", "SELECT dblink_exec('host=x', 'DELETE FROM t')", Postgres),
	deniedFn("dblink_connect", "opens a remote link", "SELECT dblink_connect('host=x')", Postgres),
	deniedFn("query_to_xml", "runs SQL given as a string", "SELECT query_to_xml('DELETE FROM t RETURNING *', true, false, '')", Postgres),
	deniedFn("query_to_xml_and_xmlschema", "runs SQL given as a string", "SELECT query_to_xml_and_xmlschema('SELECT 1', true, false, '')", Postgres),
	deniedFn("query_to_xmlschema", "runs SQL given as a string", "SELECT query_to_xmlschema('SELECT 1', true, false, '')", Postgres),
	deniedFn("cursor_to_xml", "reads a cursor", "SELECT cursor_to_xml('c', 1, true, false, '')", Postgres),
	// Writing from a query.
	{Name: "INTO OUTFILE", Clause: true, Dialects: onlyMy, Why: "writes a server file", Example: "SELECT * FROM t INTO OUTFILE '/tmp/loom-x'"},
	{Name: "INTO DUMPFILE", Clause: true, Dialects: onlyMy, Why: "writes a server file", Example: "SELECT * FROM t INTO DUMPFILE '/tmp/loom-x'"},
	{Name: "INTO", Clause: true, Dialects: allDialects, Why: "writes the result to a table, variable or file", Example: "SELECT * INTO t2 FROM t"},
}

// writeWords are the statements that write, refused wherever they appear
// (data-modifying CTEs, EXPLAIN of a write), unless written as a function
// call (MySQL's INSERT(str, pos, len, new)) or after a dot (t.update).
var writeWords = []string{"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE"}

// starts are the first words of a read-only statement, per dialect.
var starts = map[Dialect][]string{
	SQLite:   {"SELECT", "WITH", "VALUES", "EXPLAIN"},
	Postgres: {"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW"},
	MySQL:    {"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW", "DESCRIBE", "DESC"},
}

// queryStarts are what may follow EXPLAIN and its options.
var queryStarts = []string{"SELECT", "WITH", "VALUES", "TABLE"}

// explainOptions are the words between EXPLAIN and the statement.
var explainOptions = []string{"ANALYZE", "ANALYSE", "VERBOSE", "QUERY", "PLAN", "FORMAT", "JSON", "TREE", "TRADITIONAL", "EXTENDED", "PARTITIONS"}

// Check decides, before anything is sent, whether stmt may run: exactly
// one statement, which is a query (SELECT, WITH without data-modifying
// parts, VALUES, TABLE, EXPLAIN of a query, SHOW and DESCRIBE where the
// dialect has them), using no function or clause of the Denylist. It
// reads the statement with the dialect's lexical rules, so keywords in
// strings, quoted names and comments do not count. It returns the
// statement without trailing semicolons, or a *RefusedError.
func Check(d Dialect, stmt string) (string, error) {
	toks, err := lex(d, stmt)
	if err != nil {
		return "", err
	}
	// Exactly one statement: trailing semicolons are dropped.
	for len(toks) > 0 && toks[len(toks)-1].is(tokPunct, ";") {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return "", refuse("the statement is empty")
	}
	for i, t := range toks {
		if t.is(tokPunct, ";") {
			next := "another statement"
			if i+1 < len(toks) && toks[i+1].kind == tokWord {
				next = toks[i+1].text
			}
			return "", refuse("only one read-only statement is allowed; found a second one (%s)", next)
		}
	}
	first := 0
	for first < len(toks) && toks[first].is(tokPunct, "(") {
		first++
	}
	if first >= len(toks) || toks[first].kind != tokWord || !slices.Contains(starts[d], toks[first].text) {
		what := "no statement"
		if first < len(toks) {
			what = describeToken(toks[first])
		}
		return "", refuse("only one read-only statement is allowed; found %s", what)
	}
	if toks[first].text == "EXPLAIN" {
		if err := checkExplain(d, toks[first+1:]); err != nil {
			return "", err
		}
	}
	if err := checkWords(d, toks); err != nil {
		return "", err
	}
	clean := strings.TrimSpace(stmt[:toks[len(toks)-1].end])
	if d == Postgres {
		if err := checkPostgres(clean); err != nil {
			return "", err
		}
	}
	return clean, nil
}

// checkExplain checks what follows EXPLAIN: its options, then a query
// (or, in MySQL, a table name: EXPLAIN t describes t).
func checkExplain(d Dialect, toks []token) error {
	i := 0
	for i < len(toks) {
		t := toks[i]
		switch {
		case t.is(tokPunct, "(") && d == Postgres && i == 0: // EXPLAIN (ANALYZE, FORMAT JSON)
			depth := 0
			for ; i < len(toks); i++ {
				if toks[i].is(tokPunct, "(") {
					depth++
				} else if toks[i].is(tokPunct, ")") {
					if depth--; depth == 0 {
						break
					}
				}
			}
			i++
			continue
		case t.kind == tokWord && slices.Contains(explainOptions, t.text), t.is(tokPunct, "="):
			i++
			continue
		}
		break
	}
	for i < len(toks) && toks[i].is(tokPunct, "(") {
		i++
	}
	if i >= len(toks) {
		return refuse("EXPLAIN needs a query to explain")
	}
	if t := toks[i]; t.kind == tokWord && slices.Contains(queryStarts, t.text) {
		return nil
	} else if d == MySQL && i == len(toks)-1 && (t.kind == tokWord || t.kind == tokQuoted) {
		return nil
	} else {
		return refuse("only one read-only statement is allowed; found EXPLAIN %s", describeToken(t))
	}
}

// checkWords refuses write statements anywhere, and the Denylist.
func checkWords(d Dialect, toks []token) error {
	for i, t := range toks {
		afterDot := i > 0 && toks[i-1].is(tokPunct, ".")
		call := i+1 < len(toks) && toks[i+1].is(tokPunct, "(")
		if t.kind == tokWord && !afterDot && !call && slices.Contains(writeWords, t.text) {
			if t.text == "UPDATE" && i > 0 && toks[i-1].is(tokWord, "FOR") {
				return refuse("FOR UPDATE locks rows; it is not allowed in a read-only query")
			}
			return refuse("only one read-only statement is allowed; found %s", t.text)
		}
		if afterDot {
			continue
		}
		if call && (t.kind == tokWord || t.kind == tokQuoted) {
			if den := deniedFunction(d, t.text); den != nil {
				return refuse("%s() %s; it is not allowed in a read-only query", den.Name, den.Why)
			}
		}
		for _, den := range deny().clauses[d] {
			if matchClause(toks[i:], den.words) {
				return refuse("%s %s; it is not allowed in a read-only query", den.Name, den.Why)
			}
		}
	}
	return nil
}

// matchClause reports whether toks start with the clause's words.
func matchClause(toks []token, clause []string) bool {
	if len(toks) < len(clause) {
		return false
	}
	for j, w := range clause {
		if t := toks[j]; t.text != w || (t.kind != tokWord && t.kind != tokPunct) {
			return false
		}
	}
	return true
}

// denyIndex is the Denylist indexed by dialect: functions by name, and
// clauses longest first (INTO OUTFILE before INTO).
type denyIndex struct {
	funcs   map[Dialect]map[string]*Denied
	clauses map[Dialect][]clause
}

type clause struct {
	*Denied
	words []string
}

var deny = sync.OnceValue(func() denyIndex {
	x := denyIndex{funcs: map[Dialect]map[string]*Denied{}, clauses: map[Dialect][]clause{}}
	for i := range denylist {
		den := &denylist[i]
		for _, d := range den.Dialects {
			if den.Clause {
				x.clauses[d] = append(x.clauses[d], clause{den, strings.Fields(den.Name)})
				continue
			}
			if x.funcs[d] == nil {
				x.funcs[d] = map[string]*Denied{}
			}
			x.funcs[d][den.Name] = den
		}
	}
	for _, cs := range x.clauses {
		slices.SortStableFunc(cs, func(a, b clause) int { return len(b.words) - len(a.words) })
	}
	return x
})

// deniedFunction returns the Denylist entry of the function name (any
// case) in dialect d, or nil.
func deniedFunction(d Dialect, name string) *Denied {
	return deny().funcs[d][strings.ToLower(name)]
}
