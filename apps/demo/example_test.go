package demo_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// The demo graph runs until it asks for approval; the process that ran it
// may then die. Another process with the same saver resumes the thread.
func Example() {
	ctx := context.Background()
	saver := checkpoint.NewMemory() // use checkpoint/sqlite for a real file

	first, _ := demo.Graph().Compile(graph.WithSaver(saver))
	res, _ := first.Invoke(ctx, "thread-1", func(d *demo.Doc) { d.Title = "launch" })
	fmt.Println(res.Status, "at", res.Interrupt.Node)
	fmt.Println(string(res.Interrupt.Payload))

	// ... the first process is killed here; a new one starts ...
	second, _ := demo.Graph().Compile(graph.WithSaver(saver))
	res, _ = second.Resume(ctx, "thread-1", demo.Answer{Accept: true, Note: "ship it"})
	fmt.Println(res.Status, res.State.Approved, res.State.Items)
	// Output:
	// interrupted at confirm
	// {"summary":"Checklist \"launch\": 3 items after 3 correction rounds. Approve?","items":["Write the launch notes","Check the launch build","Tell the team"]}
	// done true [Write the launch notes Check the launch build Tell the team]
}

// The demo composed of two graphs runs as the demo does; its spec lists
// the graph the node review runs.
func ExampleComposed() {
	ctx := context.Background()
	g, err := demo.Composed()
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := g.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Invoke(ctx, "thread-1", func(d *demo.Doc) { d.Title = "launch" })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, "at", res.Interrupt.Node, "after", res.State.Rounds, "rounds")
	res, err = c.Resume(ctx, "thread-1", demo.Answer{Accept: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.State.Approved, res.State.Items)
	sp := c.Spec()
	fmt.Println(sp.Nodes, "review runs", sp.Subgraphs["review"].Nodes)
	// Output:
	// interrupted at confirm after 3 rounds
	// done true [Write the launch notes Check the launch build Tell the team]
	// [draft review confirm] review runs [check fix]
}
