package schedule_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/apps/schedule"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/tool"
)

// The agent without a model, through the graph API: a plan card, a tool
// card for the optimiser's best candidate, and the summary. Checkpoints and
// the schedule share one SQLite file, as under `loom serve`.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "schedule-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "loom.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if err := db.Migrate(ctx, "schedule", schedule.Migrations); err != nil {
		fmt.Println(err)
		return
	}
	st := schedule.NewStore(db)
	if _, err := st.EnsureSample(ctx, schedule.DefaultOwner); err != nil {
		fmt.Println(err)
		return
	}
	agent, err := schedule.New(schedule.Config{Store: st}) // no Model: heuristics
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := agent.Graph().Compile(graph.WithSaver(db.Saver()))
	if err != nil {
		fmt.Println(err)
		return
	}

	res, _ := g.Invoke(ctx, "student", func(s *schedule.State) { s.Message = "帮我安排下周的复习" })
	fmt.Println(res.Status, "at", res.Interrupt.Node, "—", len(res.State.Plan.Steps), "steps")
	res, _ = g.Resume(ctx, "student", tool.ConfirmAnswer{Accept: true})
	fmt.Println(res.Status, "at", res.Interrupt.Node)
	res, _ = g.Resume(ctx, "student", tool.ConfirmAnswer{Accept: true})
	fmt.Println(res.Status, res.State.Outcome)
	s, _ := st.Load(ctx, schedule.DefaultOwner)
	fmt.Println(len(s.Pending()), "pending, revision", s.Revision)
	// Output:
	// interrupted at interrupt — 2 steps
	// interrupted at execute_act
	// done done
	// 0 pending, revision 1
}

// Analyze measures a week and lists what the optimiser proposes; with
// pending items, whole placements of them. (The figures the optimiser
// reaches are in the README; they change as it improves.)
func ExampleAnalyze() {
	s := schedule.Sample(schedule.DefaultOwner)
	r := schedule.Analyze(s, schedule.ScanOptions{})
	fmt.Printf("health %.1f, %d pending\n", r.Health, r.Pending)
	best := r.Candidates[0]
	fmt.Printf("best: %s of %d items, gain above 0: %v\n", best.Op, len(best.Moves), best.Gain > 0)
	if err := best.Apply(s); err != nil {
		fmt.Println(err)
		return
	}
	after := schedule.Analyze(s, schedule.ScanOptions{})
	fmt.Printf("%d pending, health higher: %v\n", after.Pending, after.Health > r.Health)
	// Output:
	// health 65.0, 10 pending
	// best: place of 10 items, gain above 0: true
	// 0 pending, health higher: true
}

// RoughSchedule places the pending items by local rules; Optimize then
// applies the best moves and swaps until no candidate improves the week.
func ExampleOptimize() {
	s := schedule.Generate(3)
	placed := schedule.RoughSchedule(s, schedule.RoughOptions{})
	before := schedule.Measure(s).Health()
	steps := schedule.Optimize(s, 100)
	fmt.Printf("placed %d of %d; steps taken: %v, health higher: %v\n", len(placed), len(s.Items), len(steps) > 0, schedule.Measure(s).Health() > before)
	// Output:
	// placed 17 of 17; steps taken: true, health higher: true
}
