// Package spider measures schema recall on a benchmark in the Spider
// format: tables.json (database schemas) and a questions file whose
// entries carry the parsed SQL that answers them. The gold tables of a
// question are every table its SQL reads, nested queries included.
package spider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/datasource"
)

// Database is one schema of tables.json.
type Database struct {
	ID     string
	Tables []datasource.Table
}

// Question is one question with the tables its SQL reads.
type Question struct {
	DB       string
	Question string
	// Gold are the names of the tables the SQL reads.
	Gold []string
}

// Set is a benchmark: its databases and questions.
type Set struct {
	Databases map[string]*Database
	// Order lists the database IDs as tables.json gives them.
	Order     []string
	Questions []Question
}

// Load reads tables.json and a questions file (Spider's dev.json or
// train_spider.json format).
func Load(tablesPath, questionsPath string) (*Set, error) {
	var raw []struct {
		DB          string          `json:"db_id"`
		Tables      []string        `json:"table_names_original"`
		Columns     [][2]any        `json:"column_names_original"`
		Types       []string        `json:"column_types"`
		PrimaryKeys []any           `json:"primary_keys"`
		ForeignKeys [][2]int        `json:"foreign_keys"`
		_           json.RawMessage // other fields are not read
	}
	if err := readJSON(tablesPath, &raw); err != nil {
		return nil, fmt.Errorf("reading tables: %w", err)
	}
	set := &Set{Databases: map[string]*Database{}}
	for n, r := range raw {
		if r.DB == "" || len(r.Tables) == 0 {
			return nil, fmt.Errorf("reading tables: schema %d has no db_id or no table_names_original", n+1)
		}
		db := &Database{ID: r.DB, Tables: make([]datasource.Table, len(r.Tables))}
		for i, name := range r.Tables {
			db.Tables[i] = datasource.Table{Name: name, Kind: "table", Rows: -1}
		}
		type colRef struct{ table, index int }
		cols := make([]colRef, len(r.Columns))
		for i, c := range r.Columns {
			ti, ok := c[0].(float64)
			name, _ := c[1].(string)
			if !ok || int(ti) < 0 || int(ti) >= len(db.Tables) {
				cols[i] = colRef{-1, -1}
				continue // the "*" column
			}
			t := &db.Tables[int(ti)]
			typ := ""
			if i < len(r.Types) {
				typ = r.Types[i]
			}
			cols[i] = colRef{int(ti), len(t.Columns)}
			t.Columns = append(t.Columns, datasource.Column{Name: name, Type: typ, Nullable: true})
		}
		col := func(i int) (*datasource.Table, string, bool) {
			if i < 0 || i >= len(cols) || cols[i].table < 0 {
				return nil, "", false
			}
			t := &db.Tables[cols[i].table]
			return t, t.Columns[cols[i].index].Name, true
		}
		for _, pk := range r.PrimaryKeys {
			// A key is a column index, or a list of them for a composite key.
			var ids []int
			switch v := pk.(type) {
			case float64:
				ids = []int{int(v)}
			case []any:
				for _, x := range v {
					if f, ok := x.(float64); ok {
						ids = append(ids, int(f))
					}
				}
			}
			for _, id := range ids {
				if t, name, ok := col(id); ok {
					t.PrimaryKey = append(t.PrimaryKey, name)
				}
			}
		}
		for _, fk := range r.ForeignKeys {
			t, from, ok1 := col(fk[0])
			ref, to, ok2 := col(fk[1])
			if ok1 && ok2 {
				t.ForeignKeys = append(t.ForeignKeys, datasource.ForeignKey{Columns: []string{from}, RefTable: ref.Name, RefColumns: []string{to}})
			}
		}
		set.Databases[r.DB] = db
		set.Order = append(set.Order, r.DB)
	}
	var qs []struct {
		DB       string          `json:"db_id"`
		Question string          `json:"question"`
		SQL      json.RawMessage `json:"sql"`
	}
	if err := readJSON(questionsPath, &qs); err != nil {
		return nil, fmt.Errorf("reading questions: %w", err)
	}
	for n, q := range qs {
		db, ok := set.Databases[q.DB]
		if !ok {
			return nil, fmt.Errorf("reading questions: question %d names database %q, which tables.json does not have", n+1, q.DB)
		}
		var sql any
		if err := json.Unmarshal(q.SQL, &sql); err != nil || sql == nil {
			return nil, fmt.Errorf("reading questions: question %d has no parsed sql", n+1)
		}
		ids := map[int]bool{}
		tableUnits(sql, ids)
		var gold []string
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			if id < 0 || id >= len(db.Tables) {
				return nil, fmt.Errorf("reading questions: question %d reads table %d of %s, which has %d", n+1, id, q.DB, len(db.Tables))
			}
			gold = append(gold, db.Tables[id].Name)
		}
		if len(gold) == 0 {
			return nil, fmt.Errorf("reading questions: question %d reads no table", n+1)
		}
		set.Questions = append(set.Questions, Question{DB: q.DB, Question: q.Question, Gold: gold})
	}
	if len(set.Questions) == 0 {
		return nil, fmt.Errorf("reading questions: %s has none", questionsPath)
	}
	return set, nil
}

// tableUnits collects the table of every ["table_unit", n] in parsed
// Spider SQL, at any depth: FROM clauses of nested queries in conditions,
// FROM subqueries, and INTERSECT, UNION and EXCEPT parts.
func tableUnits(v any, ids map[int]bool) {
	switch x := v.(type) {
	case []any:
		if len(x) == 2 {
			if kind, ok := x[0].(string); ok && kind == "table_unit" {
				if n, ok := x[1].(float64); ok {
					ids[int(n)] = true
					return
				}
			}
		}
		for _, e := range x {
			tableUnits(e, ids)
		}
	case map[string]any:
		for _, e := range x {
			tableUnits(e, ids)
		}
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The pools Evaluate can index.
const (
	// PoolQuestions indexes every table of every database the questions
	// name, as one pool.
	PoolQuestions = "questions"
	// PoolDB indexes each question's own database alone.
	PoolDB = "db"
	// PoolAll indexes every database of tables.json as one pool.
	PoolAll = "all"
)

// Report is what Evaluate measured.
type Report struct {
	// AllGoldAtK is the share of questions whose gold tables are all
	// among the top K tables recalled.
	AllGoldAtK float64 `json:"all_gold_at_k"`
	// TableRecallAtK is the mean share of a question's gold tables among
	// the top K.
	TableRecallAtK float64 `json:"table_recall_at_k"`
	// MRR is the mean reciprocal rank of the first gold table in the top
	// K (0 when none is there).
	MRR float64 `json:"mrr"`
	// N is the number of questions.
	N int `json:"n"`
	// P50Ms and P99Ms are percentiles of the time one recall took.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// K, Pool and Tables say what was measured: Tables is the number of
	// tables indexed (per database, the largest, for PoolDB).
	K      int    `json:"k"`
	Pool   string `json:"pool"`
	Tables int    `json:"tables"`
	// Misses are the questions whose gold tables were not all recalled.
	Misses []Miss `json:"-"`
}

// Miss is a question whose gold tables were not all in the top K.
type Miss struct {
	Question string
	Gold     []string
	Got      []string
}

// Evaluate recalls the tables of every question, with no model: the
// question alone as the query, the top k tables of recall.Schema.Recall
// with no token budget, joins included as the agent gets them.
func (s *Set) Evaluate(ctx context.Context, pool string, k int) (*Report, error) {
	if k <= 0 {
		return nil, fmt.Errorf("k must be at least 1, not %d", k)
	}
	var dbs []string
	switch pool {
	case PoolQuestions:
		seen := map[string]bool{}
		for _, q := range s.Questions {
			if !seen[q.DB] {
				seen[q.DB] = true
				dbs = append(dbs, q.DB)
			}
		}
	case PoolAll:
		dbs = s.Order
	case PoolDB:
	default:
		return nil, fmt.Errorf("unknown pool %q: it is questions, db or all", pool)
	}
	rep := &Report{K: k, Pool: pool, N: len(s.Questions)}
	index := func(ids []string) (*recall.Schema, error) {
		var tables []datasource.Table
		for _, id := range ids {
			for _, t := range s.Databases[id].Tables {
				t.Name = qualified(pool, id, t.Name)
				for i := range t.ForeignKeys {
					t.ForeignKeys[i].RefTable = qualified(pool, id, t.ForeignKeys[i].RefTable)
				}
				tables = append(tables, t)
			}
		}
		rep.Tables = max(rep.Tables, len(tables))
		return recall.NewSchema(ctx, recall.Source{Tables: tables}, nil)
	}
	pooled := map[string]*recall.Schema{}
	if pool != PoolDB {
		ix, err := index(dbs)
		if err != nil {
			return nil, err
		}
		for _, id := range dbs {
			pooled[id] = ix
		}
	}
	var times []time.Duration
	for _, q := range s.Questions {
		ix := pooled[q.DB]
		if ix == nil {
			var err error
			if ix, err = index([]string{q.DB}); err != nil {
				return nil, err
			}
			pooled[q.DB] = ix
		}
		start := time.Now()
		res, err := ix.Recall(ctx, []string{q.Question}, recall.Options{K: k})
		if err != nil {
			return nil, fmt.Errorf("question %q: %w", q.Question, err)
		}
		times = append(times, time.Since(start))
		var got []string
		for _, t := range res.Tables {
			got = append(got, t.Name)
		}
		found, first := 0, 0
		for _, g := range q.Gold {
			if i := slices.Index(got, qualified(pool, q.DB, g)); i >= 0 {
				found++
				if first == 0 || i+1 < first {
					first = i + 1
				}
			}
		}
		if found == len(q.Gold) {
			rep.AllGoldAtK++
		} else {
			rep.Misses = append(rep.Misses, Miss{Question: q.Question, Gold: q.Gold, Got: got})
		}
		rep.TableRecallAtK += float64(found) / float64(len(q.Gold))
		if first > 0 {
			rep.MRR += 1 / float64(first)
		}
	}
	n := float64(len(s.Questions))
	rep.AllGoldAtK /= n
	rep.TableRecallAtK /= n
	rep.MRR /= n
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rep.P50Ms = ms(times[len(times)/2])
	rep.P99Ms = ms(times[min(len(times)-1, len(times)*99/100)])
	return rep, nil
}

// qualified names a table in a pool of several databases db.table, so
// that tables of the same name in two databases stay apart; the index
// reads only the part after the dot.
func qualified(pool, db, table string) string {
	if pool == PoolDB {
		return table
	}
	return db + "." + strings.ToLower(table)
}
