package dataagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/apps/dataagent/sandbox"
	"github.com/loomkit/loom/internal/bm25"
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
	p := &parts{report: report.Renderer{}, python: &sandboxRunner{r: opts.Sandbox}}
	if db != nil {
		ks, err := knowledge.Open(ctx, db, AgentName)
		if err != nil {
			return nil, fmt.Errorf("dataagent: %w", err)
		}
		for _, s := range sources {
			if s.Name == knowledge.DemoSource {
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
		p.knowledge = storeKnowledge{ks}
		p.knowledgeAPI = knowledge.Handler(ks, "/api/v1/dataagent/knowledge/")
	}
	return p, nil
}

// storeKnowledge recalls from the knowledge store with BM25.
type storeKnowledge struct{ s *knowledge.Store }

var evidenceAnalyzer = bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 3}

// Evidence ranks owner's knowledge of source for query with BM25. An
// example's Match is its score over the question's score against itself,
// so 1 is the same words.
func (k storeKnowledge) Evidence(ctx context.Context, owner, source, query string, n int) ([]Evidence, error) {
	docs, err := k.s.Docs(knowledge.WithOwner(ctx, owner), source)
	if err != nil {
		return nil, err
	}
	terms := make([][]uint64, len(docs))
	for i, d := range docs {
		terms[i] = evidenceAnalyzer.Text(d.Text)
	}
	ix := bm25.New(terms, bm25.Params{})
	hits, self := ix.Search(evidenceAnalyzer.Text(query), n)
	out := make([]Evidence, 0, len(hits))
	for _, h := range hits {
		d := docs[h.Doc]
		e := Evidence{Kind: string(d.Kind), Title: d.Title, Text: d.Text, SQL: d.SQL, Score: h.Score}
		if d.Kind == knowledge.KindExample && self > 0 {
			e.Match = min(h.Score/self, 1)
		}
		out = append(out, e)
	}
	return out, nil
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
