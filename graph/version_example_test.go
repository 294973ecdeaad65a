package graph_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// Ticket is the state of version 1 of the example's graph.
type Ticket struct {
	Title string `json:"title"`
	Owner string `json:"owner"`
}

// TicketV2 is the state of version 2: the owner is now the assignee.
type TicketV2 struct {
	Title    string `json:"title"`
	Assignee string `json:"assignee"`
	Approved bool   `json:"approved"`
}

// A graph changes under a waiting thread: version 2 renames the node the
// thread waits at and a field of its state, and declares how a thread of
// version 1 becomes one of version 2. The thread's answer reaches the
// renamed node; a thread of a version newer than the graph is refused.
func ExampleGraph_Migrate() {
	ctx := context.Background()
	saver := checkpoint.NewMemory()

	// Version 1 (no version declared): node "approve" asks a person.
	one := graph.New[Ticket]("tickets").
		Node("approve", func(ctx context.Context, t Ticket) (Ticket, error) {
			_, err := graph.Ask[bool](ctx, "approve "+t.Title+"?")
			return t, err
		}).
		Edge(graph.Start, "approve").Edge("approve", graph.End)
	c1, err := one.Compile(graph.WithSaver(saver))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c1.Invoke(ctx, "T-7", func(t *Ticket) { t.Title, t.Owner = "fix the lift", "ana" })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "at", res.Interrupt.Node)

	// Version 2: "approve" is now "review", and "owner" is "assignee".
	two := graph.New[TicketV2]("tickets").Version(2).
		Migrate(1, graph.RenameNode("approve", "review"), graph.RenameField("owner", "assignee")).
		Node("review", func(ctx context.Context, t TicketV2) (TicketV2, error) {
			ok, err := graph.Ask[bool](ctx, "approve "+t.Title+"?")
			t.Approved = ok
			return t, err
		}).
		Edge(graph.Start, "review").Edge("review", graph.End)
	c2, err := two.Compile(graph.WithSaver(saver))
	if err != nil {
		log.Fatal(err)
	}
	res2, err := c2.Resume(ctx, "T-7", true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %+v\n", res2.Status, res2.State)
	head, err := saver.Get(ctx, "T-7", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written by version", head.Meta.Version)

	// A thread that version 3 wrote cannot run on version 2.
	three := graph.New[TicketV2]("tickets").Version(3).Migrate(2).
		Node("review", func(_ context.Context, t TicketV2) (TicketV2, error) { return t, nil }).
		Edge(graph.Start, "review").Edge("review", graph.End)
	c3, err := three.Compile(graph.WithSaver(saver))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c3.Invoke(ctx, "T-8", nil); err != nil {
		log.Fatal(err)
	}
	_, err = c2.Continue(ctx, "T-8")
	fmt.Println(errors.Is(err, graph.ErrVersion))
	fmt.Println(err)
	// Output:
	// interrupted at approve
	// done: {Title:fix the lift Assignee:ana Approved:true}
	// written by version 2
	// true
	// graph tickets: thread T-8: graph: the thread does not fit this version of the graph: it was written by version 3, and this graph is version 2, which is older
}
