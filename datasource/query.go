package datasource

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// Result is the result of a statement, with values typed for JSON:
// numbers stay numbers, times are RFC 3339 strings, bytes are base64
// strings (valid UTF-8 text stays text), NULL is null.
type Result struct {
	Columns []string `json:"columns"`
	// Types are the columns' database types, as the driver names them.
	Types []string `json:"types,omitempty"`
	Rows  [][]any  `json:"rows"`
	// Truncated is set when the statement had more rows than MaxRows or
	// more bytes than MaxBytes; Rows holds those that fit.
	Truncated bool `json:"truncated"`
	// MS is how long the statement took, in milliseconds.
	MS float64 `json:"ms"`
	// SQL is the statement as it ran.
	SQL string `json:"sql,omitempty"`
}

// ErrTimeout is what a statement that ran past its timeout matches with
// errors.Is.
var ErrTimeout = errors.New("the statement ran past its timeout")

// Query runs one read-only statement through every layer of the guard:
// Check, then the engine's read-only session with the source's timeout,
// keeping at most MaxRows rows and MaxBytes bytes. A refusal is a
// *RefusedError; other errors are the database's, without credentials.
func (s *Source) Query(ctx context.Context, stmt string) (*Result, error) {
	return s.QueryLimits(ctx, stmt, s.limits)
}

// QueryLimits is Query with other limits; zero fields take the source's.
func (s *Source) QueryLimits(ctx context.Context, stmt string, l Limits) (*Result, error) {
	clean, err := Check(s.dialect, stmt)
	if err != nil {
		return nil, err
	}
	if l.Timeout <= 0 {
		l.Timeout = s.limits.Timeout
	}
	if l.MaxRows <= 0 {
		l.MaxRows = s.limits.MaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = s.limits.MaxBytes
	}
	res, err := s.run(ctx, clean, l)
	if err != nil {
		return nil, s.scrub(s.lost(ctx, err))
	}
	return res, nil
}

// run runs a checked statement in the engine's read-only session.
func (s *Source) run(ctx context.Context, stmt string, l Limits) (*Result, error) {
	db, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	mariadb := s.mariadb
	s.mu.Unlock()
	start := time.Now()
	// On servers the context outlives the engine's own timeout a little,
	// so that the engine's clear error comes first; it ends the statement
	// when the engine does not. SQLite has only the context.
	grace := 500 * time.Millisecond
	if s.dialect == SQLite {
		grace = 0
	}
	qctx, cancel := context.WithTimeout(ctx, l.Timeout+grace)
	defer cancel()
	conn, err := db.Conn(qctx)
	if err != nil {
		return nil, timeoutOr(qctx, ctx, l.Timeout, fmt.Errorf("connect: %w", err))
	}
	defer conn.Close()
	ms := max(1, l.Timeout.Milliseconds())
	var q interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	} = conn
	switch s.dialect {
	case MySQL:
		set := fmt.Sprintf("SET SESSION max_execution_time = %d", ms)
		if mariadb {
			set = fmt.Sprintf("SET SESSION max_statement_time = %.3f", float64(ms)/1000)
		}
		if _, err := conn.ExecContext(qctx, set); err != nil {
			return nil, fmt.Errorf("set the statement timeout: %w", err)
		}
		fallthrough
	case Postgres:
		tx, err := conn.BeginTx(qctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, timeoutOr(qctx, ctx, l.Timeout, fmt.Errorf("begin a read-only transaction: %w", err))
		}
		defer tx.Rollback()
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(qctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", ms)); err != nil {
				return nil, fmt.Errorf("set the statement timeout: %w", err)
			}
		}
		q = tx
	}
	rows, err := q.QueryContext(qctx, stmt)
	if err != nil {
		return nil, timeoutOr(qctx, ctx, l.Timeout, err)
	}
	defer rows.Close()
	res, err := collect(rows, l)
	if res != nil && res.Truncated {
		// Stop the statement rather than read what is left of it: the
		// connection is dropped, the transaction with it.
		cancel()
		err = nil
	}
	if err != nil {
		return nil, timeoutOr(qctx, ctx, l.Timeout, err)
	}
	res.MS = math.Round(float64(time.Since(start).Microseconds())/100) / 10
	res.SQL = stmt
	return res, nil
}

// timeoutOr returns ErrTimeout, naming the timeout, when the statement
// ran past it (the engine said so, or the context ended), else err.
func timeoutOr(qctx, parent context.Context, timeout time.Duration, err error) error {
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	engine := (errors.As(err, &pgErr) && pgErr.Code == "57014") || // query_canceled by statement_timeout
		(errors.As(err, &myErr) && (myErr.Number == 1969 || myErr.Number == 3024)) // MariaDB, MySQL
	if parent.Err() == nil && (engine || errors.Is(qctx.Err(), context.DeadlineExceeded)) {
		return fmt.Errorf("%w (%s)", ErrTimeout, timeout)
	}
	return err
}

// collect reads rows into a Result, up to the limits.
func collect(rows *sql.Rows, l Limits) (*Result, error) {
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: make([]string, len(cols)), Types: make([]string, len(cols)), Rows: [][]any{}}
	kinds := make([]valueKind, len(cols))
	for i, c := range cols {
		res.Columns[i] = c.Name()
		res.Types[i] = strings.ToLower(c.DatabaseTypeName())
		kinds[i] = kindOf(res.Types[i])
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	size := 0
	for rows.Next() {
		if len(res.Rows) >= l.MaxRows {
			res.Truncated = true
			return res, nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		for i, v := range vals {
			var n int
			row[i], n = jsonValue(v, kinds[i])
			size += n
		}
		if size > l.MaxBytes {
			res.Truncated = true
			return res, nil
		}
		res.Rows = append(res.Rows, row)
	}
	return res, rows.Err()
}

// valueKind is how a column's values are typed for JSON.
type valueKind uint8

const (
	kindAny valueKind = iota
	kindNumber
	kindText
	kindBinary
	// kindDate is a date without a time: 2020-03-01.
	kindDate
	// kindDateTime is a date and time without a zone (DATETIME,
	// TIMESTAMP WITHOUT TIME ZONE): 2020-03-01 12:00:00.
	kindDateTime
)

// kindOf classifies a database type name.
func kindOf(typ string) valueKind {
	switch {
	case strings.Contains(typ, "int"), strings.Contains(typ, "numeric"), strings.Contains(typ, "decimal"),
		strings.Contains(typ, "float"), strings.Contains(typ, "double"), strings.Contains(typ, "real"),
		typ == "year", strings.HasPrefix(typ, "unsigned"):
		if strings.Contains(typ, "interval") || strings.Contains(typ, "point") {
			return kindText
		}
		return kindNumber
	case strings.Contains(typ, "blob"), strings.Contains(typ, "binary"), typ == "bytea", typ == "bit", strings.Contains(typ, "geometry"):
		return kindBinary
	case typ == "":
		return kindAny
	case typ == "date":
		return kindDate
	case typ == "datetime", typ == "timestamp", typ == "timestamp without time zone", strings.HasPrefix(typ, "datetime("):
		return kindDateTime
	}
	return kindText
}

// jsonValue converts a scanned value to one encoding/json writes as the
// type it is, and returns its size in bytes.
func jsonValue(v any, k valueKind) (any, int) {
	switch x := v.(type) {
	case nil:
		return nil, 4
	case int64:
		return x, 8
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64), 8
		}
		return x, 8
	case bool:
		return x, 5
	case time.Time:
		// A value without a zone is written as the database shows it,
		// not as an instant in UTC.
		switch {
		case k == kindDate && x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0:
			return x.Format(time.DateOnly), 10
		case k == kindDate, k == kindDateTime:
			return x.Format("2006-01-02 15:04:05.999999999"), 26
		}
		return x.Format(time.RFC3339Nano), 32
	case []byte:
		if k == kindNumber {
			if n := json.Number(x); isNumber(string(n)) {
				return n, len(x)
			}
		}
		if k != kindBinary && utf8.Valid(x) {
			return string(x), len(x)
		}
		return base64.StdEncoding.EncodeToString(x), len(x) * 4 / 3
	case string:
		if k == kindNumber && isNumber(x) {
			return json.Number(x), len(x)
		}
		return x, len(x)
	case int32:
		return int64(x), 8
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), 8
	case float32:
		return jsonValue(float64(x), k)
	}
	s := fmt.Sprint(v)
	return s, len(s)
}

// isNumber reports whether s is a JSON number.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	return json.Valid([]byte(s)) && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// Explain returns the engine's plan of a read-only statement: EXPLAIN on
// Postgres and MySQL, EXPLAIN QUERY PLAN on SQLite. The statement is
// checked first, and the plan runs through the same read-only path.
func (s *Source) Explain(ctx context.Context, stmt string) (*Result, error) {
	clean, err := Check(s.dialect, stmt)
	if err != nil {
		return nil, err
	}
	toks, _ := lex(s.dialect, clean)
	if len(toks) > 0 && toks[0].text == "EXPLAIN" {
		return s.Query(ctx, clean)
	}
	if !slices.Contains(queryStarts, firstWord(toks)) {
		return nil, refuse("only a query can be explained; found %s", firstWord(toks))
	}
	prefix := "EXPLAIN "
	if s.dialect == SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	return s.Query(ctx, prefix+clean)
}

// firstWord returns the first word of a statement, after opening
// parentheses.
func firstWord(toks []token) string {
	for _, t := range toks {
		if t.kind == tokWord {
			return t.text
		}
		if !t.is(tokPunct, "(") {
			break
		}
	}
	return ""
}
