package recall

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/llm"
)

// Meaning is what a semantic model says about a column, or about a table
// when Column is empty.
type Meaning struct {
	// Table and Column name what is described, as the data source spells
	// them.
	Table  string `json:"table" yaml:"table"`
	Column string `json:"column,omitempty" yaml:"column,omitempty"`
	// Name is the business name, e.g. "客户等级" or "customer tier".
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Synonyms are other words people use for it.
	Synonyms []string `json:"synonyms,omitempty" yaml:"synonyms,omitempty"`
	// Description says more, e.g. how it is computed.
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Values gives the meaning of enum values: stored value → meaning.
	Values map[string]string `json:"values,omitempty" yaml:"values,omitempty"`
}

// Source is what a schema index is built from.
type Source struct {
	// Tables are the data source's tables with their columns and keys, as
	// datasource's Schema describes them.
	Tables []datasource.Table
	// Meanings are the semantic model's entries; those naming no table of
	// Tables are ignored.
	Meanings []Meaning
	// Samples are a few distinct values of text columns, keyed
	// "table.column", so that a question naming a value ("orders from
	// Berlin") finds the column that holds it.
	Samples map[string][]string
}

// Schema is an index of a data source's tables for schema recall. It is
// immutable and safe for concurrent use.
type Schema struct {
	tables   []datasource.Table
	byName   map[string]int
	ret      *Retriever
	columns  [][]columnInfo // per table
	tableMng []*Meaning     // per table; nil when none
	links    [][]link       // per table: the tables it joins
	tokens   []atomic.Int32 // per table: 1 + tokens of its whole description by the default counter; 0 until counted
	vocab    []string       // the words of the tables' and columns' names, sorted
}

// columnInfo is what the index knows of one column.
type columnInfo struct {
	words   map[string]bool // search words of its name, meaning and samples
	meaning *Meaning
	samples []string
	key     bool // in the primary key or a join
}

// link is a join between two tables.
type link struct {
	to       int
	from, at string // column here, column there
	declared bool   // a declared foreign key, not a name match
	refers   bool   // the column here refers to the column there
}

// NewSchema indexes src's tables: a document per table of its name split
// into words (a name qualified as schema.table by its table part), its comment, its semantic names, synonyms and enum meanings,
// and the same of its columns with their sample values. With an Embedder
// (may be nil) every table document is also embedded, once, here.
func NewSchema(ctx context.Context, src Source, emb llm.Embedder) (*Schema, error) {
	s := &Schema{
		tables:   src.Tables,
		byName:   make(map[string]int, len(src.Tables)),
		columns:  make([][]columnInfo, len(src.Tables)),
		tableMng: make([]*Meaning, len(src.Tables)),
	}
	for i, t := range src.Tables {
		s.byName[strings.ToLower(t.Name)] = i
	}
	colMng := map[[2]string]*Meaning{}
	for i := range src.Meanings {
		m := &src.Meanings[i]
		t, ok := s.byName[strings.ToLower(m.Table)]
		switch {
		case !ok:
		case m.Column == "":
			s.tableMng[t] = m
		default:
			colMng[[2]string{strings.ToLower(m.Table), strings.ToLower(m.Column)}] = m
		}
	}
	docs := make([]Doc, len(src.Tables))
	for i, t := range src.Tables {
		var b strings.Builder
		// The table's name three times: it says more than any one column.
		name := strings.Repeat(bareName(t.Name)+" ", 3)
		b.WriteString(name)
		b.WriteString(t.Comment)
		if m := s.tableMng[i]; m != nil {
			writeMeaning(&b, m)
		}
		cols := make([]columnInfo, len(t.Columns))
		for j, c := range t.Columns {
			var cb strings.Builder
			cb.WriteString(c.Name + " " + c.Comment)
			ci := columnInfo{meaning: colMng[[2]string{strings.ToLower(t.Name), strings.ToLower(c.Name)}]}
			if ci.meaning != nil {
				writeMeaning(&cb, ci.meaning)
			}
			ci.samples = src.Samples[t.Name+"."+c.Name]
			for _, v := range ci.samples {
				cb.WriteString(" " + v)
			}
			ci.words = map[string]bool{}
			for _, w := range words(cb.String()) {
				ci.words[w] = true
			}
			cols[j] = ci
			b.WriteString(" " + cb.String())
		}
		s.columns[i] = cols
		docs[i] = Doc{ID: t.Name, Text: b.String()}
	}
	vocab := map[string]bool{}
	for _, t := range src.Tables {
		for _, w := range words(bareName(t.Name)) {
			vocab[w] = true
		}
		for _, c := range t.Columns {
			for _, w := range words(c.Name) {
				vocab[w] = true
			}
		}
	}
	s.vocab = slices.Sorted(maps.Keys(vocab))
	s.linkTables()
	counter() // loaded here, once, rather than in the first Recall
	s.tokens = make([]atomic.Int32, len(s.tables))
	ret, err := NewRetriever(ctx, docs, emb)
	if err != nil {
		return nil, fmt.Errorf("indexing %d tables: %w", len(docs), err)
	}
	s.ret = ret
	return s, nil
}

func writeMeaning(b *strings.Builder, m *Meaning) {
	b.WriteString(" " + m.Name + " " + strings.Join(m.Synonyms, " ") + " " + m.Description)
	for v, meaning := range m.Values {
		b.WriteString(" " + v + " " + meaning)
	}
}

// linkTables finds the joins: declared foreign keys, and logical keys — a
// column that is another table's single-column primary key by name
// (People_ID in perpetrator and in people), or is named for another table
// followed by "id" (customer_id → customers).
func (s *Schema) linkTables() {
	s.links = make([][]link, len(s.tables))
	add := func(a, b int, from, at string, declared bool) {
		if a == b {
			return
		}
		for _, l := range s.links[a] {
			if l.to == b && strings.EqualFold(l.from, from) {
				return
			}
		}
		s.links[a] = append(s.links[a], link{to: b, from: from, at: at, declared: declared, refers: true})
		s.links[b] = append(s.links[b], link{to: a, from: at, at: from, declared: declared})
	}
	// Logical keys join tables of the same schema (qualifier) only.
	keyOf := map[string]int{} // qualifier + a table's lone primary key column, lower case → table
	named := map[string]int{} // qualifier + a table's name as words → table
	for i, t := range s.tables {
		q := qualifier(t.Name)
		if len(t.PrimaryKey) == 1 && !isBareID(t.PrimaryKey[0]) {
			keyOf[q+strings.ToLower(t.PrimaryKey[0])] = i
		}
		named[q+strings.Join(words(bareName(t.Name)), " ")] = i
	}
	for i, t := range s.tables {
		for _, fk := range t.ForeignKeys {
			j, ok := s.byName[strings.ToLower(fk.RefTable)]
			if !ok || len(fk.Columns) == 0 || len(fk.RefColumns) == 0 {
				continue
			}
			add(i, j, fk.Columns[0], fk.RefColumns[0], true)
			s.markKey(i, fk.Columns[0])
			s.markKey(j, fk.RefColumns[0])
		}
		for _, pk := range t.PrimaryKey {
			s.markKey(i, pk)
		}
		q := qualifier(t.Name)
		for _, c := range t.Columns {
			if j, ok := keyOf[q+strings.ToLower(c.Name)]; ok && j != i {
				add(i, j, c.Name, s.tables[j].PrimaryKey[0], false)
				s.markKey(i, c.Name)
				continue
			}
			w := words(c.Name)
			if len(w) < 2 || w[len(w)-1] != "id" {
				continue
			}
			if j, ok := named[q+strings.Join(w[:len(w)-1], " ")]; ok && j != i {
				at := "id"
				if pk := s.tables[j].PrimaryKey; len(pk) == 1 {
					at = pk[0]
				}
				add(i, j, c.Name, at, false)
				s.markKey(i, c.Name)
			}
		}
	}
}

// bareName is a table's name without its qualifier: orders of
// sales.orders. Tables are indexed by it; the qualifier only tells apart
// tables of the same name in different schemas.
func bareName(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

// qualifier is what precedes a table's bare name, dot included, or "".
func qualifier(name string) string {
	return name[:strings.LastIndexByte(name, '.')+1]
}

func isBareID(name string) bool {
	w := words(name)
	return len(w) == 1 && w[0] == "id"
}

func (s *Schema) markKey(t int, column string) {
	for j, c := range s.tables[t].Columns {
		if strings.EqualFold(c.Name, column) {
			s.columns[t][j].key = true
		}
	}
}

// Len is the number of tables indexed.
func (s *Schema) Len() int { return len(s.tables) }

// Options bound what Recall returns.
type Options struct {
	// K is the most tables returned, joins included. Default 5.
	K int
	// TokenBudget bounds the tokens of Result.Text; tables that do not
	// fit whole are given with their matched and key columns only, and
	// those that do not fit even so are left out. 0 means no bound.
	TokenBudget int
	// Counter counts tokens; tiktoken's cl100k_base when nil.
	Counter Counter
}

// Table is a recalled table.
type Table struct {
	datasource.Table
	// Score is its fused retrieval score (see Hit); a join table brought
	// in for two others scores just below the lower of them.
	Score float64
	// Columns are the columns the queries name, by their words, semantic
	// names, synonyms or sample values.
	Columns []string
	// Via says why a table the queries do not name is here: "join of a
	// and b". Empty for tables found by their words.
	Via string
	// Compact is set when the packed text gives only the matched and key
	// columns, for the budget.
	Compact bool
}

// Result is what Recall found.
type Result struct {
	// Tables are the recalled tables, best first.
	Tables []Table
	// Text describes them for a model: columns, types, keys, joins,
	// business names and sample values, within the token budget.
	Text string
	// Tokens is Text's length in tokens.
	Tokens int
}

// Recall finds the tables that queries (the canonical question first, then
// its rewordings) need: the K best by their words (and embeddings, when
// the index has them), with the tables that join two of them brought in
// along foreign and logical keys, packed to the token budget.
func (s *Schema) Recall(ctx context.Context, queries []string, o Options) (*Result, error) {
	if o.K <= 0 {
		o.K = 5
	}
	if more := s.related(queries); more != "" {
		queries = slices.Clone(queries)
		for i := range queries {
			queries[i] += " " + more
		}
	}
	hits, err := s.ret.Search(ctx, queries, 0)
	if err != nil {
		return nil, fmt.Errorf("recalling tables: %w", err)
	}
	qwords := map[string]bool{}
	for _, q := range queries {
		for _, w := range words(q) {
			qwords[w] = true
		}
	}
	picked := s.expand(hits, o.K, qwords)
	out := make([]Table, len(picked))
	for i, p := range picked {
		t := Table{Table: s.tables[p.table], Score: p.score, Via: p.via}
		for j, c := range s.columns[p.table] {
			if matches(c.words, qwords) {
				t.Columns = append(t.Columns, s.tables[p.table].Columns[j].Name)
			}
		}
		out[i] = t
	}
	at := make([]int, len(picked))
	for i, p := range picked {
		at[i] = p.table
	}
	res, err := s.pack(out, at, o)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// related are the words of the tables' and columns' names that a
// query's word not among them is another form of (see formsOf: "weigh"
// and weight, "located" and location, "manage" and manager). They are added to the queries,
// so that a question in other forms of the names' words finds them.
func (s *Schema) related(queries []string) string {
	var out []string
	seen := map[string]bool{}
	for _, q := range queries {
		for _, w := range words(q) {
			if len(w) < 4 || stopword[w] || seen[w] || !isASCIILetters(w) {
				continue
			}
			seen[w] = true
			if _, found := slices.BinarySearch(s.vocab, w); found {
				continue
			}
			// Names' words that start with w's first four letters.
			i, _ := slices.BinarySearch(s.vocab, w[:4])
			for ; i < len(s.vocab) && strings.HasPrefix(s.vocab[i], w[:4]); i++ {
				v := s.vocab[i]
				if formsOf(v, w) && !seen["+"+v] {
					seen["+"+v] = true
					out = append(out, v)
				}
			}
		}
	}
	return strings.Join(out, " ")
}

// formsOf reports whether a and b are forms of one word: past their
// common start (four letters at least) each ends in nothing or an
// English ending (located and location, manage and management, weigh and
// weight, compete and competition).
func formsOf(a, b string) bool {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	return p >= 4 && wordEnding[a[p:]] && wordEnding[b[p:]]
}

var wordEnding = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`- e ed ing er ers or ors ion ions ation ations ition itions ment ments t ts y ies ity al ally ly ive ence ance ent ant est`) {
		wordEnding[strings.Trim(e, "-")] = true
	}
}

func matches(col, q map[string]bool) bool {
	for w := range col {
		if q[w] && !stopword[w] {
			return true
		}
	}
	return false
}

type pick struct {
	table int
	score float64
	via   string
}

// expand takes the k best hits and brings in the tables a query over
// them needs to join: for every two of them that the others do not
// already join, the tables on the shortest path of keys between them (at
// most two), ranked just below the lower of the two; for a link table
// (one that is mostly keys to other tables, like singer_in_concert), the
// tables at its ends, ranked just below it. The list is then cut at k
// again.
func (s *Schema) expand(hits []Hit, k int, qwords map[string]bool) []pick {
	top := make([]pick, 0, min(len(hits), k))
	in := map[int]bool{}
	score := make([]float64, len(s.tables)) // 0: not found
	for _, h := range hits {
		score[h.Doc] = h.Score
	}
	// A table the question names, joined to a better one, ranks just
	// below it: among the many stadium tables, the one a recalled concert
	// table refers to. Only such tables can move up, so the k best are
	// among them and the k best hits.
	best := slices.Clone(hits[:min(len(hits), k)])
	for _, a := range best[:len(best):len(best)] {
		for _, c := range s.ends(a.Doc) {
			if sc := score[c]; sc == 0 || sc >= a.Score || !s.named(c, qwords) {
				continue
			}
			score[c] = a.Score * (1 - 1e-6)
			if i := slices.IndexFunc(best, func(h Hit) bool { return h.Doc == c }); i >= 0 {
				best[i].Score = score[c]
			} else {
				best = append(best, Hit{Doc: c, Score: score[c]})
			}
		}
	}
	slices.SortStableFunc(best, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	hits = best
	for _, h := range hits[:min(len(hits), k)] {
		top = append(top, pick{table: h.Doc, score: h.Score})
		in[h.Doc] = true
	}
	if len(top) == 0 {
		return nil
	}
	var more []pick
	for x := range top {
		a := top[x].table
		for y := x + 1; y < len(top); y++ {
			b := top[y].table
			path := s.path(a, b, in)
			lower := min(top[x].score, top[y].score)
			for n, c := range path {
				if in[c] {
					continue
				}
				in[c] = true
				more = append(more, pick{table: c, score: lower * (1 - 1e-9*float64(n+1)), via: "join of " + s.tables[a].Name + " and " + s.tables[b].Name})
			}
		}
	}
	for x := range top {
		a := top[x].table
		if !s.isLinkTable(a) {
			continue
		}
		ends := s.ends(a)
		// The better-matching end first.
		slices.SortStableFunc(ends, func(p, q int) int { return cmp.Compare(score[q], score[p]) })
		for n, c := range ends {
			if in[c] {
				continue
			}
			in[c] = true
			more = append(more, pick{table: c, score: top[x].score * (1 - 1e-9*float64(n+1)), via: "joined through " + s.tables[a].Name})
		}
	}
	all := append(top, more...)
	slices.SortStableFunc(all, func(a, b pick) int { return cmp.Compare(b.score, a.score) })
	return all[:min(len(all), k)]
}

// path returns the tables between a and b on a shortest path of keys
// with at most two tables between them, or nil when the tables already
// in join them (directly or through each other) or no such path exists.
func (s *Schema) path(a, b int, in map[int]bool) []int {
	const maxHops = 3
	prev := map[int]int{a: -1}
	frontier := []int{a}
	for hop := 0; hop < maxHops && len(frontier) > 0; hop++ {
		var next []int
		for _, t := range frontier {
			for _, l := range s.links[t] {
				if _, seen := prev[l.to]; seen {
					continue
				}
				prev[l.to] = t
				if l.to == b {
					var out []int
					for c := t; c != a; c = prev[c] {
						out = append(out, c)
					}
					for _, c := range out {
						if !in[c] {
							return out
						}
					}
					return nil // joined through tables already in
				}
				next = append(next, l.to)
			}
		}
		frontier = next
	}
	return nil
}

// named reports whether every word of table t's bare name is among the
// query's words.
func (s *Schema) named(t int, qwords map[string]bool) bool {
	w := words(bareName(s.tables[t].Name))
	for _, x := range w {
		if !qwords[x] {
			return false
		}
	}
	return len(w) > 0
}

// ends are the distinct tables a table joins, in the order of its links.
func (s *Schema) ends(t int) []int {
	var out []int
	for _, l := range s.links[t] {
		if !slices.Contains(out, l.to) {
			out = append(out, l.to)
		}
	}
	return out
}

// isLinkTable reports whether a table joins two or more others and at
// least half of its columns are keys: a table that relates rows of others
// and says little of its own.
func (s *Schema) isLinkTable(t int) bool {
	if len(s.ends(t)) < 2 {
		return false
	}
	keys := 0
	for _, c := range s.columns[t] {
		if c.key {
			keys++
		}
	}
	return 2*keys >= len(s.columns[t])
}
