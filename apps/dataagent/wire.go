package dataagent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/apps/dataagent/sandbox"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// parts are the agent's parts as the server opens them.
type parts struct {
	knowledge    Knowledge
	knowledgeAPI http.Handler
	schema       SchemaRecaller
	python       PythonRunner
	report       Renderer
}

// openParts opens the knowledge store on db (nil: no knowledge), with
// the demo shop's knowledge seeded when the demo source is served, the
// Python sandbox and the report renderer.
func openParts(ctx context.Context, opts ServerOptions, sources []Source, db *store.DB, log *slog.Logger) (*parts, error) {
	sr := &schemaRecall{sources: map[string]*datasource.Source{}, emb: opts.Embedder, log: log,
		bases: map[string]*schemaBase{}, cache: newCache[*schemaIndex]()}
	for _, s := range sources {
		sr.sources[s.Name] = s.Source
	}
	p := &parts{report: report.Renderer{}, python: &sandboxRunner{r: opts.Sandbox}, schema: sr}
	ks := knowledge.Open(db, AgentName)
	// The demo knowledge is about the demo shop: it is seeded when
	// the sources are the demo's, not for a source of the same name.
	demoShop := opts.Sources == nil && opts.SourcesFile == ""
	for _, s := range sources {
		if demoShop && s.Name == knowledge.DemoSource {
			demo, err := knowledge.Demo()
			if err != nil {
				return nil, fmt.Errorf("dataagent: %w", err)
			}
			if err := ks.Seed(demo); err != nil {
				return nil, fmt.Errorf("dataagent: %w", err)
			}
			log.Debug("dataagent: the demo shop's knowledge is seeded for every key")
		}
	}
	// Knowledge may be added for the served sources only, and an
	// example's SQL must pass the guard in its source's dialect.
	dialects := map[string]datasource.Dialect{}
	for _, s := range sources {
		if s.Source != nil {
			dialects[s.Name] = s.Dialect()
		}
	}
	ks.SetSources(dialects)
	p.knowledge = storeKnowledge{s: ks, emb: opts.Embedder, cache: newCache[*evidenceIndex]()}
	p.knowledgeAPI = knowledge.Handler(ks, "/api/v1/dataagent/knowledge/")
	sr.ks = ks
	return p, nil
}

// storeKnowledge recalls from the knowledge store with the hybrid
// retriever (words, and embeddings when an embedder is configured),
// keeping one index per owner and source until their knowledge changes.
type storeKnowledge struct {
	s     *knowledge.Store
	emb   llm.Embedder
	cache *cache[*evidenceIndex]
}

type evidenceIndex struct {
	print string
	docs  []knowledge.Doc
	r     *recall.Retriever
}

// Evidence ranks owner's knowledge of source for query. An example's
// Match is how much of the question's words it says (the retriever's
// lexical score, 1 for the same words).
func (k storeKnowledge) Evidence(ctx context.Context, owner, source, query string, n int) ([]Evidence, error) {
	docs, err := k.s.Docs(knowledge.WithOwner(ctx, owner), source)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, d := range docs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", d.ID, d.Text, d.SQL)
	}
	print, key := string(h.Sum(nil)), owner+"\x00"+source
	ix, ok := k.cache.Get(key)
	if !ok || ix.print != print {
		rdocs := make([]recall.Doc, len(docs))
		for i, d := range docs {
			rdocs[i] = recall.Doc{ID: d.ID, Text: d.Text}
		}
		r, err := recall.NewRetriever(ctx, rdocs, k.emb)
		if err != nil {
			return nil, fmt.Errorf("indexing the knowledge of %s: %w", source, err)
		}
		ix = &evidenceIndex{print: print, docs: docs, r: r}
		k.cache.Add(key, ix)
	}
	hits, err := ix.r.Search(ctx, []string{query}, n)
	if err != nil {
		return nil, err
	}
	out := make([]Evidence, 0, len(hits))
	for _, hit := range hits {
		d := ix.docs[hit.Doc]
		e := Evidence{Kind: string(d.Kind), Title: d.Title, Text: d.Text, SQL: d.SQL, Score: hit.Score}
		if d.Kind == knowledge.KindExample {
			e.Match = hit.Lexical
		}
		out = append(out, e)
	}
	return out, nil
}

// schemaRecall recalls tables with the schema index of each source: its
// tables, a few distinct values of each text column, and the caller's
// semantic model, rebuilt when the semantic model or the tables change.
// The tables are read again when they are older than ttl and after
// Forget (a query that failed on a missing table or column); the sample
// values only when the tables changed.
type schemaRecall struct {
	sources map[string]*datasource.Source
	ks      *knowledge.Store // nil: no semantic model
	emb     llm.Embedder
	log     *slog.Logger
	ttl     time.Duration // 0: SchemaTTL
	now     func() time.Time

	mu    sync.Mutex
	bases map[string]*schemaBase
	cache *cache[*schemaIndex]
}

// SchemaTTL is how long the analyst uses a source's tables as read before
// reading them again, so that tables created, renamed or dropped while
// the server runs are seen.
const SchemaTTL = 5 * time.Minute

type schemaBase struct {
	tables  []datasource.Table
	samples map[string][]string
	// print identifies the tables as read; read is when; stale says
	// they are to be read again before the next use.
	print string
	read  time.Time
	stale bool
}

// Forget marks source's tables to be read again before the next recall:
// a query failed on a table or column that is not there.
func (r *schemaRecall) Forget(source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.bases[source]; ok {
		b.stale = true
	}
}

type schemaIndex struct {
	print string
	s     *recall.Schema
}

// Recall implements SchemaRecaller.
func (r *schemaRecall) Recall(ctx context.Context, source string, queries []string, budget int) ([]datasource.Table, string, error) {
	base, err := r.base(ctx, source)
	if err != nil {
		return nil, "", err
	}
	var meanings []recall.Meaning
	if r.ks != nil {
		cols, err := r.ks.SemanticModel(ctx, source)
		if err != nil {
			return nil, "", err
		}
		for _, c := range cols {
			meanings = append(meanings, recall.Meaning{Table: c.Table, Column: c.Column, Name: c.Name, Synonyms: c.Synonyms, Description: c.Description, Values: c.Values})
		}
	}
	b, _ := json.Marshal(meanings)
	sum := sha256.Sum256(b)
	print, key := base.print+string(sum[:]), server.Caller(ctx)+"\x00"+source
	ix, ok := r.cache.Get(key)
	if !ok || ix.print != print {
		s, err := recall.NewSchema(ctx, recall.Source{Tables: base.tables, Meanings: meanings, Samples: base.samples}, r.emb)
		if err != nil {
			return nil, "", fmt.Errorf("indexing the schema of %s: %w", source, err)
		}
		ix = &schemaIndex{print: print, s: s}
		r.cache.Add(key, ix)
	}
	res, err := ix.s.Recall(ctx, queries, recall.Options{K: SchemaTables, TokenBudget: budget})
	if err != nil {
		return nil, "", err
	}
	tables := make([]datasource.Table, len(res.Tables))
	for i, t := range res.Tables {
		tables[i] = t.Table
	}
	return tables, res.Text, nil
}

// SchemaTables is the most tables schema recall returns (joins included)
// before the budget packs them.
const SchemaTables = 8

// base reads a source's tables and sample values: the tables when they
// were never read, are older than the TTL or were forgotten, the sample
// values when the tables changed.
func (r *schemaRecall) base(ctx context.Context, source string) (*schemaBase, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	ttl := cmp.Or(r.ttl, SchemaTTL)
	old, ok := r.bases[source]
	if ok && !old.stale && now().Sub(old.read) < ttl {
		return old, nil
	}
	src, known := r.sources[source]
	if !known {
		return nil, fmt.Errorf("no data source %q", source)
	}
	tables, err := src.Schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the schema of %s: %w", source, err)
	}
	// The print is of the tables' structure, not their row counts.
	shape := slices.Clone(tables)
	for i := range shape {
		shape[i].Rows, shape[i].RowsEstimated = 0, false
	}
	j, _ := json.Marshal(shape)
	sum := sha256.Sum256(j)
	b := &schemaBase{tables: tables, print: string(sum[:]), read: now()}
	if ok && old.print == b.print {
		b.samples = old.samples
	} else {
		if ok {
			r.log.Info("dataagent: the tables of a source changed; its schema index is rebuilt", "source", source, "tables", len(tables))
		}
		b.samples = samples(ctx, src, tables, r.log)
	}
	r.bases[source] = b
	return b, nil
}

// Bounds of the sample values read for the schema index.
const (
	samplesPerColumn = 5
	sampleColumns    = 300
	sampleChars      = 40
)

// samples reads a few distinct values of each text column of tables
// (up to sampleColumns columns), through the guarded path. A column that
// cannot be read has none.
func samples(ctx context.Context, src *datasource.Source, tables []datasource.Table, log *slog.Logger) map[string][]string {
	quote := func(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
	if src.Dialect() == datasource.MySQL {
		quote = func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
	}
	out := map[string][]string{}
	n := 0
	for _, t := range tables {
		for _, c := range t.Columns {
			typ := strings.ToLower(c.Type)
			if !strings.Contains(typ, "char") && !strings.Contains(typ, "text") && !strings.Contains(typ, "string") {
				continue
			}
			if n++; n > sampleColumns {
				return out
			}
			stmt := fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL LIMIT %d", quote(c.Name), quote(t.Name), quote(c.Name), samplesPerColumn)
			res, err := src.QueryLimits(ctx, stmt, datasource.Limits{Timeout: 5 * time.Second, MaxRows: samplesPerColumn})
			if err != nil {
				log.Debug("dataagent: no sample values", "table", t.Name, "column", c.Name, "err", err)
				continue
			}
			for _, row := range res.Rows {
				if v, ok := row[0].(string); ok && v != "" && utf8.RuneCountInString(v) <= sampleChars {
					out[t.Name+"."+c.Name] = append(out[t.Name+"."+c.Name], v)
				}
			}
		}
	}
	return out
}

// sandboxRunner runs Python in the bubblewrap sandbox, checking once that
// it can.
type sandboxRunner struct {
	r     sandbox.Runner
	once  sync.Once
	check error
}

// Run runs code; a script that fails is a *PythonError saying why it
// was stopped and how its traceback ends.
func (s *sandboxRunner) Run(ctx context.Context, code string, files map[string][]byte) (*PythonOutput, error) {
	s.once.Do(func() { s.check = s.r.Check(context.WithoutCancel(ctx)) })
	if s.check != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSandbox, s.check)
	}
	res, err := s.r.Run(ctx, sandbox.Job{Code: code, Files: files})
	if errors.Is(err, sandbox.ErrUnavailable) {
		return nil, fmt.Errorf("%w: %v", ErrNoSandbox, err)
	}
	if err != nil {
		return nil, err
	}
	if !res.OK() {
		return nil, &PythonError{Message: res.Failure()}
	}
	return &PythonOutput{Stdout: res.Stdout, Files: res.Files}, nil
}

// cache keeps indexes by owner and source. It is bounded: when full it
// starts again empty, so many keys do not hold many indexes.
type cache[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

const cacheSize = 256

func newCache[V any]() *cache[V] { return &cache[V]{m: map[string]V{}} }

func (c *cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *cache[V]) Add(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= cacheSize {
		clear(c.m)
	}
	c.m[key] = v
}
