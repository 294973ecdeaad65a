package dataagent

import (
	"context"
	"errors"

	"github.com/loomkit/loom/datasource"
)

// The agent's parts are consumed through the small interfaces below, so
// each can be replaced (a test double of a remote service, another
// sandbox) without the graph knowing.

// Knowledge is what the agent knows about a data source beyond its
// schema: business terms, documents and question → SQL examples, kept per
// owner (API key) and data source.
type Knowledge interface {
	// Evidence returns the items of owner's knowledge for source that
	// best match query, best first, at most k.
	Evidence(ctx context.Context, owner, source, query string, k int) ([]Evidence, error)
}

// SchemaRecaller finds the tables of a data source that a question needs.
type SchemaRecaller interface {
	// Recall returns the tables of source that match queries (the
	// canonical question first), expanded along their keys, best first,
	// and their description for the model packed to budget tokens.
	Recall(ctx context.Context, source string, queries []string, budget int) (tables []datasource.Table, text string, err error)
}

// PythonRunner runs Python analysis code in a sandbox.
type PythonRunner interface {
	// Run runs code with files (name → content) in its work directory
	// and returns what it printed and the files it wrote. A script that
	// fails (an exception, a limit) is a *PythonError; a sandbox that
	// cannot run at all wraps ErrNoSandbox.
	Run(ctx context.Context, code string, files map[string][]byte) (*PythonOutput, error)
}

// PythonOutput is what a Python run produced.
type PythonOutput struct {
	Stdout string `json:"stdout"`
	// Files are the files the script wrote, by name (images among them).
	Files map[string][]byte `json:"-"`
}

// ErrNoSandbox is what a PythonRunner returns, wrapped, when it cannot run
// Python at all (bwrap or python3 missing): the agent goes on without
// Python and says so in the report.
var ErrNoSandbox = errors.New("no Python sandbox on this machine")

// Renderer draws reports: Markdown with chart blocks (a fenced
// ```echarts block holding an ECharts option as JSON).
type Renderer interface {
	// HTML renders the report as one self-contained HTML page with its
	// charts drawn in it; locale "en…" gives the page's own words in
	// English, else Chinese.
	HTML(markdown, locale string) ([]byte, error)
	// Markdown is the report for download as Markdown.
	Markdown(markdown, locale string) string
	// Chart returns a chart block for a result, or false when the
	// result has nothing to draw (no rows, nothing numeric).
	Chart(res datasource.Result, title string) (string, bool)
}

// Evidence is one item of knowledge recalled for a question.
type Evidence struct {
	// Kind is "term", "document" or "example" (a question → SQL pair).
	Kind  string `json:"kind"`
	Title string `json:"title"`
	Text  string `json:"text,omitempty"`
	// SQL is an example's statement.
	SQL string `json:"sql,omitempty"`
	// Score is the recall's score; Match, for an example, is how close
	// its question is to the user's, from 0 to 1.
	Score float64 `json:"score,omitempty"`
	Match float64 `json:"match,omitempty"`
}
