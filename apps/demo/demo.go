// Package demo is Loom's demo agent, which needs no model: it drafts a
// short checklist from a title, checks it, fixes what the check finds in a
// correction loop bounded at 3 rounds, and asks a person to approve the
// result before it is final.
//
// It shows in four nodes what the five apps are made of: a route, a
// bounded loop with an exit, and an interrupt that waits for a person.
// Composed is the same agent with the check → fix loop as a graph of its
// own (Review) run by one node, a subgraph.
package demo

import (
	"context"
	"fmt"
	"strings"

	"github.com/loomkit/loom/graph"
)

// Doc is the demo's state.
type Doc struct {
	Title    string   `json:"title"`
	Items    []string `json:"items"`
	Problems []string `json:"problems,omitempty"`
	Rounds   int      `json:"rounds"`
	Approved bool     `json:"approved"`
	Note     string   `json:"note,omitempty"`
}

// Input is what a run of the demo starts from; it is decoded over Doc.
type Input struct {
	Title string `json:"title,omitempty" jsonschema:"description=what the checklist is for\\, e.g. launch"`
}

// Question is what the confirm node asks.
type Question struct {
	Summary string   `json:"summary"`
	Items   []string `json:"items"`
	Open    []string `json:"open_problems,omitempty"`
}

// Answer is a person's reply to the question; rejection is a value.
type Answer struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note,omitempty"`
}

// MaxRounds bounds the check → fix loop.
const MaxRounds = 3

// Graph builds the demo graph.
func Graph() *graph.Graph[Doc] {
	g := graph.New[Doc]("demo").Node("draft", draft)
	addReview(g, "confirm").
		Node("confirm", confirm).
		Edge(graph.Start, "draft").
		Edge("draft", "check").
		Edge("confirm", graph.End)
	return g
}

// Review builds the check → fix loop as a graph of its own: it ends when
// the checklist has no problems, or after MaxRounds fixes.
func Review() *graph.Graph[Doc] {
	return addReview(graph.New[Doc]("review"), graph.End).Edge(graph.Start, "check")
}

// Composed builds the demo with its check → fix loop in a subgraph: draft,
// then the node "review" running Review to its end, then confirm. It runs
// as Graph does; its loop's steps are one step of the outer graph, and
// their events name the nodes "review/check" and "review/fix".
func Composed() (*graph.Graph[Doc], error) {
	review, err := Review().Compile()
	if err != nil {
		return nil, fmt.Errorf("compile the demo's review: %w", err)
	}
	same := func(d Doc) Doc { return d }
	reviewed := func(_ Doc, d Doc) Doc { return d }
	return graph.New[Doc]("demo-composed").
		Node("draft", draft).
		Subgraph("review", graph.Nest(review, same, reviewed)).
		Node("confirm", confirm).
		Edge(graph.Start, "draft").
		Edge("draft", "review").
		Edge("review", "confirm").
		Edge("confirm", graph.End), nil
}

// addReview adds to g the nodes check and fix, fix looping back to check
// at most MaxRounds times, and leaving for exit when check finds nothing
// or the rounds are used up.
func addReview(g *graph.Graph[Doc], exit string) *graph.Graph[Doc] {
	return g.Node("check", check).
		Node("fix", fix).
		Route("check", func(d Doc) string {
			if len(d.Problems) > 0 {
				return "fix"
			}
			return exit
		}, "fix", exit).
		Edge("fix", "check").
		Loop("fix", "check", MaxRounds, exit)
}

func draft(_ context.Context, d Doc) (Doc, error) {
	title := strings.TrimSpace(d.Title)
	if title == "" {
		title = "release"
	}
	d.Title = title
	d.Items = []string{
		"todo: write the " + title + " notes",
		"check the " + title + " build",
		"tell the team",
		"tell the team",
	}
	d.Rounds, d.Approved, d.Note = 0, false, ""
	return d, nil
}

// check finds problems: duplicate items, items still marked todo, and
// items with no capital letter.
func check(_ context.Context, d Doc) (Doc, error) {
	d.Problems = nil
	seen := map[string]bool{}
	for i, it := range d.Items {
		switch {
		case seen[it]:
			d.Problems = append(d.Problems, fmt.Sprintf("item %d repeats %q", i+1, it))
		case strings.HasPrefix(it, "todo:"):
			d.Problems = append(d.Problems, fmt.Sprintf("item %d is still marked todo", i+1))
		case it != "" && strings.ToUpper(it[:1]) != it[:1]:
			d.Problems = append(d.Problems, fmt.Sprintf("item %d does not start with a capital", i+1))
		}
		seen[it] = true
	}
	return d, nil
}

// fix mends one kind of problem per round, the way a correction loop
// mends one error report at a time.
func fix(_ context.Context, d Doc) (Doc, error) {
	d.Rounds++
	items := make([]string, 0, len(d.Items))
	seen := map[string]bool{}
	for _, it := range d.Items {
		switch d.Rounds {
		case 1:
			if seen[it] {
				continue
			}
		case 2:
			it = strings.TrimSpace(strings.TrimPrefix(it, "todo:"))
		default:
			if it != "" {
				it = strings.ToUpper(it[:1]) + it[1:]
			}
		}
		seen[it] = true
		items = append(items, it)
	}
	d.Items = items
	return d, nil
}

func confirm(ctx context.Context, d Doc) (Doc, error) {
	a, err := graph.Ask[Answer](ctx, Question{
		Summary: fmt.Sprintf("Checklist %q: %d items after %d correction rounds. Approve?", d.Title, len(d.Items), d.Rounds),
		Items:   d.Items,
		Open:    d.Problems,
	})
	if err != nil {
		return d, err
	}
	d.Approved, d.Note = a.Accept, a.Note
	return d, nil
}
