package knowledge

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what an entry is.
type Kind string

// The kinds of knowledge.
const (
	// KindTerm is a business term: its meaning or formula, and synonyms.
	KindTerm Kind = "term"
	// KindDocument is a piece of text the analyst should know.
	KindDocument Kind = "document"
	// KindExample is a question with the SQL that answers it.
	KindExample Kind = "example"
	// KindSemantic is a semantic model entry: a table's or column's
	// business name, synonyms and the meaning of its values.
	KindSemantic Kind = "semantic"
)

// Kinds are the kinds, in the order files and listings give them.
var Kinds = []Kind{KindTerm, KindDocument, KindExample, KindSemantic}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// plural is the kind's name in paths and files: terms, documents,
// examples, semantic.
func (k Kind) plural() string {
	if k == KindSemantic {
		return string(k)
	}
	return string(k) + "s"
}

// Entry is one piece of knowledge of a data source. Which fields it has
// depends on its Kind:
//
//   - term: Term, and Description or Formula (or both), Synonyms;
//   - document: Title and Text;
//   - example: Question and SQL, Description;
//   - semantic: Table, and Column unless the entry is about the table;
//     at least one of Name (the business name), Synonyms, Values (stored
//     value → meaning, for enum columns) and Description.
//
// A field of another kind is an error, so a misplaced field is never
// silently dropped.
type Entry struct {
	// ID is given by the store.
	ID   string `json:"id,omitempty" yaml:"-"`
	Kind Kind   `json:"kind,omitempty" yaml:"-"`
	// Source is the data source the entry is about.
	Source string `json:"source,omitempty" yaml:"-"`

	Term        string   `json:"term,omitempty" yaml:"term,omitempty"`
	Formula     string   `json:"formula,omitempty" yaml:"formula,omitempty"`
	Title       string   `json:"title,omitempty" yaml:"title,omitempty"`
	Text        string   `json:"text,omitempty" yaml:"text,omitempty"`
	Question    string   `json:"question,omitempty" yaml:"question,omitempty"`
	SQL         string   `json:"sql,omitempty" yaml:"sql,omitempty"`
	Table       string   `json:"table,omitempty" yaml:"table,omitempty"`
	Column      string   `json:"column,omitempty" yaml:"column,omitempty"`
	Name        string   `json:"name,omitempty" yaml:"name,omitempty"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Synonyms    []string `json:"synonyms,omitempty" yaml:"synonyms,omitempty"`
	// Values maps a stored value to what it means ("cancelled" → "已取消").
	Values map[string]string `json:"values,omitempty" yaml:"values,omitempty"`

	CreatedAt time.Time `json:"created_at,omitzero" yaml:"-"`
	UpdatedAt time.Time `json:"updated_at,omitzero" yaml:"-"`
}

// ErrInvalid is wrapped by the errors of an entry or a file that cannot
// be stored; the message says which entry and what is wrong.
var ErrInvalid = errors.New("invalid knowledge")

// Limits on an entry, in characters.
const (
	maxShort    = 200      // a term, title, name, table, column, synonym or value
	maxText     = 64 << 10 // a document's text, a description or formula
	maxSQL      = 16 << 10
	maxSynonyms = 50
	maxValues   = 500
)

var sourceName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkSource says what is wrong with a data source's name, or nil.
func checkSource(source string) error {
	if source == "" {
		return fmt.Errorf("%w: source is required (the data source's name)", ErrInvalid)
	}
	if !sourceName.MatchString(source) {
		return fmt.Errorf("%w: source %q must be 1 to 64 letters, digits, '_' or '-'", ErrInvalid, source)
	}
	return nil
}

// field is one of an entry's kind-specific fields, for validation.
type field struct {
	name  string
	set   bool
	kinds []Kind
}

// fields lists e's kind-specific fields and the kinds that have them.
func (e *Entry) fields() []field {
	return []field{
		{"term", e.Term != "", []Kind{KindTerm}},
		{"formula", e.Formula != "", []Kind{KindTerm}},
		{"title", e.Title != "", []Kind{KindDocument}},
		{"text", e.Text != "", []Kind{KindDocument}},
		{"question", e.Question != "", []Kind{KindExample}},
		{"sql", e.SQL != "", []Kind{KindExample}},
		{"table", e.Table != "", []Kind{KindSemantic}},
		{"column", e.Column != "", []Kind{KindSemantic}},
		{"name", e.Name != "", []Kind{KindSemantic}},
		{"description", e.Description != "", []Kind{KindTerm, KindExample, KindSemantic}},
		{"synonyms", len(e.Synonyms) > 0, []Kind{KindTerm, KindSemantic}},
		{"values", len(e.Values) > 0, []Kind{KindSemantic}},
	}
}

// normalize trims e's text fields and drops empty and repeated synonyms,
// in slices and maps of its own.
func (e *Entry) normalize() {
	for _, p := range []*string{&e.Term, &e.Title, &e.Question, &e.Table, &e.Column, &e.Name} {
		*p = strings.TrimSpace(*p)
	}
	for _, p := range []*string{&e.Formula, &e.Text, &e.SQL, &e.Description} {
		*p = strings.TrimSpace(*p)
	}
	var syn []string
	seen := map[string]bool{}
	for _, s := range e.Synonyms {
		s = strings.TrimSpace(s)
		if k := strings.ToLower(s); s != "" && !seen[k] {
			seen[k] = true
			syn = append(syn, s)
		}
	}
	e.Synonyms = syn
	// A new map: e's may be shared with the caller's copy of the entry.
	var values map[string]string
	if len(e.Values) > 0 {
		values = make(map[string]string, len(e.Values))
		for v, m := range e.Values {
			values[v] = strings.TrimSpace(m)
		}
	}
	e.Values = values
}

// ident is what identifies e among its kind: the term, the title, the
// question, or table.column (the table alone for the table's entry).
func (e *Entry) ident() string {
	switch e.Kind {
	case KindTerm:
		return e.Term
	case KindDocument:
		return e.Title
	case KindExample:
		return e.Question
	case KindSemantic:
		if e.Column != "" {
			return e.Table + "." + e.Column
		}
		return e.Table
	}
	return ""
}

// Label names e in messages: its kind and what identifies it.
func (e *Entry) Label() string {
	what := e.ident()
	if r := []rune(what); len(r) > 60 {
		what = string(r[:60]) + "…"
	}
	if what == "" {
		return string(e.Kind)
	}
	return fmt.Sprintf("%s %q", e.Kind, what)
}

// Validate normalizes e (trims its text, drops empty and repeated
// synonyms) and says everything that is wrong with it, in an error
// wrapping ErrInvalid that names the entry.
func (e *Entry) Validate() error {
	if !e.Kind.Valid() {
		return fmt.Errorf("%w: kind %q is not one of term, document, example, semantic", ErrInvalid, e.Kind)
	}
	e.normalize()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if err := checkSource(e.Source); err != nil {
		add("%s", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	for _, f := range e.fields() {
		if f.set && !slices.Contains(f.kinds, e.Kind) {
			add("a %s has no field %q", e.Kind, f.name)
		}
	}
	need := func(name, v string) {
		if v == "" {
			add("%s is required", name)
		}
	}
	switch e.Kind {
	case KindTerm:
		need("term", e.Term)
		if e.Description == "" && e.Formula == "" {
			add("description or formula is required")
		}
	case KindDocument:
		need("title", e.Title)
		need("text", e.Text)
	case KindExample:
		need("question", e.Question)
		need("sql", e.SQL)
	case KindSemantic:
		need("table", e.Table)
		if e.Name == "" && len(e.Synonyms) == 0 && len(e.Values) == 0 && e.Description == "" {
			add("at least one of name, synonyms, values and description is required")
		}
	}
	long := func(name, v string, limit int) {
		if n := utf8.RuneCountInString(v); n > limit {
			add("%s is %d characters long; at most %d", name, n, limit)
		}
	}
	for name, v := range map[string]string{"term": e.Term, "title": e.Title, "question": e.Question, "table": e.Table, "column": e.Column, "name": e.Name} {
		long(name, v, maxShort)
	}
	long("text", e.Text, maxText)
	long("formula", e.Formula, maxText)
	long("description", e.Description, maxText)
	long("sql", e.SQL, maxSQL)
	if len(e.Synonyms) > maxSynonyms {
		add("%d synonyms; at most %d", len(e.Synonyms), maxSynonyms)
	}
	for _, s := range e.Synonyms {
		long("synonym "+s, s, maxShort)
	}
	if len(e.Values) > maxValues {
		add("%d values; at most %d", len(e.Values), maxValues)
	}
	for _, v := range slices.Sorted(maps.Keys(e.Values)) {
		switch m := e.Values[v]; {
		case m == "":
			add("value %q has no meaning", v)
		default:
			long(fmt.Sprintf("value %q", v), v, maxShort)
			long(fmt.Sprintf("the meaning of value %q", v), m, maxShort)
		}
	}
	if hasNUL(e) {
		add("text may not contain the character NUL (\\u0000)")
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("%w: %s: %s", ErrInvalid, e.Label(), strings.Join(problems, "; "))
}

// hasNUL reports whether any of e's text holds NUL, which no PostgreSQL
// text may hold.
func hasNUL(e *Entry) bool {
	texts := []string{e.Source, e.Term, e.Formula, e.Title, e.Text, e.Question, e.SQL, e.Table, e.Column, e.Name, e.Description}
	texts = append(texts, e.Synonyms...)
	for k, v := range e.Values {
		texts = append(texts, k, v)
	}
	return slices.ContainsFunc(texts, func(s string) bool { return strings.ContainsRune(s, 0) })
}

// Key is e's natural key within its owner, agent, source and kind: two
// entries with the same key are the same entry (an import updates it).
// It is the term, the title, the question or table.column, case and
// spacing folded.
func (e *Entry) Key() string {
	return strings.Join(strings.Fields(strings.ToLower(e.ident())), " ")
}
