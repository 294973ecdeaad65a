package graph_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// Doc is the state of the example's graph: a checklist drafted, checked
// and fixed in a bounded loop, then approved by a person.
type Doc struct {
	Title    string
	Items    []string
	Fixes    int
	Approved bool
	Note     string
}

// Answer is what the person answers the approval question with.
type Answer struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note"`
}

// A graph with a declared route, a bounded loop and a question to a
// person: Invoke stops at the question, Resume answers it and the run goes
// on from the node that asked.
func Example() {
	ctx := context.Background()
	g := graph.New[Doc]("checklist")
	g.Node("draft", func(_ context.Context, d Doc) (Doc, error) {
		d.Items = []string{"book a room", "TODO: invite"}
		return d, nil
	}).
		Node("check", func(_ context.Context, d Doc) (Doc, error) { return d, nil }).
		Node("fix", func(_ context.Context, d Doc) (Doc, error) {
			for i, it := range d.Items {
				d.Items[i] = strings.TrimPrefix(it, "TODO: ")
			}
			d.Fixes++
			return d, nil
		}).
		Node("confirm", func(ctx context.Context, d Doc) (Doc, error) {
			a, err := graph.Ask[Answer](ctx, "approve "+d.Title+"?")
			if err != nil {
				return d, err // the first time: the run stops here, checkpointed
			}
			d.Approved, d.Note = a.Accept, a.Note
			return d, nil
		}).
		Edge(graph.Start, "draft").
		Edge("draft", "check").
		Route("check", func(d Doc) string { // every target declared
			for _, it := range d.Items {
				if strings.HasPrefix(it, "TODO") {
					return "fix"
				}
			}
			return "confirm"
		}, "fix", "confirm").
		Edge("fix", "check").
		Loop("fix", "check", 3, "confirm"). // at most 3 rounds, then confirm
		Edge("confirm", graph.End)

	agent, err := g.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err) // names every bad node, route or loop
	}
	res, err := agent.Invoke(ctx, "thread-1", func(d *Doc) { d.Title = "launch" })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.State.Items, "fixes:", res.State.Fixes)
	res, err = agent.Resume(ctx, "thread-1", Answer{Accept: true, Note: "ship it"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "approved:", res.State.Approved, res.State.Note)
	// Output:
	// interrupted [book a room invite] fixes: 1
	// done approved: true ship it
}

// Map fans a node out over items: the branches run concurrently and
// join in item order, as one checkpointed step.
func ExampleMap() {
	type S struct {
		Words   []string
		Lengths []int
	}
	g := graph.New[S]("lengths")
	g.Node("measure", graph.Map(
		func(s S) []string { return s.Words },
		func(_ context.Context, w string) (int, error) { return len([]rune(w)), nil },
		func(s S, n []int) (S, error) { s.Lengths = n; return s, nil },
	)).
		Edge(graph.Start, "measure").
		Edge("measure", graph.End)
	agent, err := g.Compile()
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), "t", func(s *S) { s.Words = []string{"loom", "图", "graph"} })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State.Lengths)
	// Output: [4 1 5]
}

// Scenarios lists every path through a graph, loops taken once: what
// `loom graph scenarios` prints and what tests assert flows against.
func ExampleCompiled_Scenarios() {
	type S struct{ N int }
	g := graph.New[S]("parity")
	g.Node("read", func(_ context.Context, s S) (S, error) { return s, nil }).
		Node("even", func(_ context.Context, s S) (S, error) { return s, nil }).
		Node("odd", func(_ context.Context, s S) (S, error) { return s, nil }).
		Edge(graph.Start, "read").
		Route("read", func(s S) string {
			if s.N%2 == 0 {
				return "even"
			}
			return "odd"
		}, "even", "odd").
		Edge("even", graph.End).
		Edge("odd", graph.End)
	agent, err := g.Compile()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(agent.Scenarios()), "paths")
	// Output: 2 paths
}
