package spider

import (
	"encoding/csv"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/loomkit/loom/datasource"
)

// LoadDefog reads a benchmark in defog sql-eval's format: dir holds one
// <db>.json per database (its table_metadata: each table's columns with
// their types and descriptions) and, beside it, <db>.sql (the tables'
// definitions, read for their primary and foreign keys); questions is a
// CSV file with the columns db_name, question and query. A question's
// gold tables are those its first acceptable statement reads (after FROM
// or JOIN, nested queries included); the {a, b} choices of defog's gold
// SQL take their first. A row with more or fewer fields than the header
// (a stray quote) is left out.
func LoadDefog(dir, questions string) (*Set, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("reading tables: no <db>.json files in %s", dir)
	}
	set := &Set{Databases: map[string]*Database{}}
	for _, path := range paths {
		id := strings.TrimSuffix(filepath.Base(path), ".json")
		var meta struct {
			Tables map[string][]struct {
				Name        string `json:"column_name"`
				Type        string `json:"data_type"`
				Description string `json:"column_description"`
			} `json:"table_metadata"`
		}
		if err := readJSON(path, &meta); err != nil {
			return nil, fmt.Errorf("reading tables: %w", err)
		}
		if len(meta.Tables) == 0 {
			return nil, fmt.Errorf("reading tables: %s has no table_metadata", path)
		}
		db := &Database{ID: id}
		for _, name := range slices.Sorted(maps.Keys(meta.Tables)) {
			t := datasource.Table{Name: name, Kind: "table", Rows: -1}
			for _, c := range meta.Tables[name] {
				t.Columns = append(t.Columns, datasource.Column{Name: c.Name, Type: c.Type, Nullable: true, Comment: c.Description})
			}
			db.Tables = append(db.Tables, t)
		}
		if ddl, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".sql"); err == nil {
			addKeys(db.Tables, string(ddl))
		}
		set.Databases[id] = db
		set.Order = append(set.Order, id)
	}
	f, err := os.Open(questions)
	if err != nil {
		return nil, fmt.Errorf("reading questions: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true // defog's files have a stray quote or two
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading questions %s: %w", questions, err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("reading questions: %s has none", questions)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"db_name", "question", "query"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("reading questions: %s has no %s column", questions, need)
		}
	}
	for n, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			// A row whose stray quote hid a separator cannot be read
			// reliably: it is left out.
			continue
		}
		get := func(name string) string {
			if i := col[name]; i < len(row) {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		db, ok := set.Databases[get("db_name")]
		if !ok {
			return nil, fmt.Errorf("reading questions: question %d names database %q, which %s does not have", n+1, get("db_name"), dir)
		}
		gold := readTables(firstStatement(get("query")), db.Tables)
		if len(gold) == 0 {
			return nil, fmt.Errorf("reading questions: question %d reads no table of %s", n+1, db.ID)
		}
		set.Questions = append(set.Questions, Question{DB: db.ID, Question: get("question"), Gold: gold})
	}
	return set, nil
}

// firstStatement is the first of the acceptable statements of defog's
// gold SQL (separated by ";"), its {a, b} choices taking their first.
func firstStatement(sql string) string {
	stmt, _, _ := strings.Cut(sql, ";")
	return choice.ReplaceAllStringFunc(stmt, func(m string) string {
		first, _, _ := strings.Cut(strings.Trim(m, "{}"), ",")
		return first
	})
}

var choice = regexp.MustCompile(`\{[^{}]*\}`)

// readTables are the tables among tables that stmt reads: the names
// after FROM or JOIN, and after a comma of a FROM list, at any depth.
func readTables(stmt string, tables []datasource.Table) []string {
	byName := map[string]string{}
	for _, t := range tables {
		byName[strings.ToLower(t.Name)] = t.Name
	}
	seen := map[string]bool{}
	var out []string
	toks := token.FindAllString(stmt, -1)
	inFrom := false
	for i, tok := range toks {
		low := strings.ToLower(tok)
		switch low {
		case "from", "join":
			inFrom = true
			continue
		case "where", "group", "order", "having", "limit", "on", "union", "intersect", "except", "select", "(", ")", "using":
			inFrom = false
			continue
		}
		if !inFrom {
			continue
		}
		prev := strings.ToLower(toks[max(i-1, 0)])
		if prev != "from" && prev != "join" && prev != "," {
			continue
		}
		name := strings.TrimPrefix(strings.Trim(low, `"`), "public.")
		if t, ok := byName[name]; ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

var token = regexp.MustCompile(`"[^"]*"|[A-Za-z_][A-Za-z0-9_.]*|[(),]`)

// addKeys reads the primary and foreign keys of tables from their
// CREATE TABLE statements in ddl: a column's PRIMARY KEY and REFERENCES
// t(c), and the table's PRIMARY KEY (…) and FOREIGN KEY (…) REFERENCES
// t(…).
func addKeys(tables []datasource.Table, ddl string) {
	byName := map[string]*datasource.Table{}
	for i := range tables {
		byName[strings.ToLower(tables[i].Name)] = &tables[i]
	}
	for _, m := range createTable.FindAllStringSubmatch(ddl, -1) {
		t := byName[strings.ToLower(strings.TrimPrefix(m[1], "public."))]
		if t == nil {
			continue
		}
		for _, line := range strings.Split(m[2], "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), "--")
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			upper := strings.ToUpper(line)
			switch {
			case strings.HasPrefix(upper, "PRIMARY KEY"):
				t.PrimaryKey = append(t.PrimaryKey, listIn(line)...)
			case strings.HasPrefix(upper, "FOREIGN KEY"):
				if r := references.FindStringSubmatch(line); r != nil {
					t.ForeignKeys = append(t.ForeignKeys, datasource.ForeignKey{Columns: listIn(line), RefTable: refName(r[1]), RefColumns: splitList(r[2])})
				}
			case strings.HasPrefix(upper, "CONSTRAINT"), strings.HasPrefix(upper, "UNIQUE"), strings.HasPrefix(upper, "CHECK"):
			default:
				name := strings.Trim(fields[0], `"`)
				if strings.Contains(upper, "PRIMARY KEY") {
					t.PrimaryKey = append(t.PrimaryKey, name)
				}
				if r := references.FindStringSubmatch(line); r != nil {
					t.ForeignKeys = append(t.ForeignKeys, datasource.ForeignKey{Columns: []string{name}, RefTable: refName(r[1]), RefColumns: splitList(r[2])})
				}
			}
		}
	}
}

var (
	createTable = regexp.MustCompile(`(?is)CREATE TABLE\s+(?:IF NOT EXISTS\s+)?([A-Za-z0-9_."]+)\s*\((.*?)\n\);`)
	references  = regexp.MustCompile(`(?i)REFERENCES\s+([A-Za-z0-9_."]+)\s*\(([^)]*)\)`)
)

// refName is a referenced table's name without quotes or "public.".
func refName(s string) string {
	return strings.TrimPrefix(strings.ReplaceAll(s, `"`, ""), "public.")
}

// listIn is the column list in the first parentheses of line.
func listIn(line string) []string {
	_, rest, ok := strings.Cut(line, "(")
	if !ok {
		return nil
	}
	list, _, _ := strings.Cut(rest, ")")
	return splitList(list)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.Trim(strings.TrimSpace(p), `"`); p != "" {
			out = append(out, p)
		}
	}
	return out
}
