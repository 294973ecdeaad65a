package graph_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/loomkit/loom/graph"
)

// Request is the state of the Jump and Cache examples: a help request.
type Request struct {
	Text  string
	Lang  string
	Queue string
}

// A node that returns its update and where the run goes next: its
// targets are declared, so Compile checks them and Scenarios lists a path
// through each.
func ExampleGraph_Jump() {
	triage := func(_ context.Context, t Request) (Request, string, error) {
		if strings.Contains(t.Text, "refund") {
			t.Queue = "billing"
			return t, "billing", nil
		}
		t.Queue = "support"
		return t, "support", nil
	}
	done := func(_ context.Context, t Request) (Request, error) { return t, nil }
	c, err := graph.New[Request]("tickets").
		Jump("triage", triage, []string{"billing", "support"}).
		Node("billing", done).
		Node("support", done).
		Edge(graph.Start, "triage").Edge("billing", graph.End).Edge("support", graph.End).
		Compile()
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range c.Scenarios() {
		fmt.Println(s)
	}
	res, err := c.Invoke(context.Background(), "t1", func(t *Request) { t.Text = "I want a refund" })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State.Queue)
	// Output:
	// START → triage → billing → END
	// START → triage → support → END
	// billing
}

// A pure node whose result is reused for the same input for a minute: the
// second run takes it from the cache without calling the node.
func ExampleCache() {
	calls := 0
	detect := func(_ context.Context, t Request) (Request, error) {
		calls++ // a model call, say
		t.Lang = "en"
		return t, nil
	}
	c, err := graph.New[Request]("lang").
		Node("detect", detect, graph.Pure(), graph.Cache(graph.CachePolicy{TTL: time.Minute})).
		Edge(graph.Start, "detect").Edge("detect", graph.End).
		Compile()
	if err != nil {
		log.Fatal(err)
	}
	for _, thread := range []string{"a", "b"} {
		if _, err := c.Invoke(context.Background(), thread, func(t *Request) { t.Text = "hello" }); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(calls, "call")
	// Output: 1 call
}
