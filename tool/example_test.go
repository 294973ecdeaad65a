package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loomkit/loom/tool"
)

type MoveArgs struct {
	TaskID int `json:"task_id" jsonschema:"description=the task to move"`
	Day    int `json:"day" jsonschema:"minimum=1,maximum=7"`
}

func ExampleNew() {
	move := tool.New("move", "Move a task to another day.", tool.Write,
		func(ctx context.Context, a MoveArgs) (string, error) {
			return fmt.Sprintf("task %d moved to day %d", a.TaskID, a.Day), nil
		})

	reg := tool.NewRegistry()
	if err := reg.Register("schedule", "edit", move); err != nil {
		panic(err)
	}
	var view tool.View // kept in graph state
	view.Add("schedule", "edit")
	for _, d := range reg.Definitions(view) {
		fmt.Println(d.Name, string(d.Parameters))
	}

	t, _ := reg.Resolve(view, "move")
	_, err := t.Call(context.Background(), json.RawMessage(`{"task_id": 4, "day": "Monday"}`))
	fmt.Println(err)

	var policy tool.Policy
	if policy.NeedsConfirm(t) {
		req, _ := t.ConfirmRequest(context.Background(), json.RawMessage(`{"task_id": 4, "day": 2}`))
		fmt.Println(req.Summary)
	}
	out, _ := t.Call(context.Background(), json.RawMessage(`{"task_id": 4, "day": 2}`))
	fmt.Println(out)
	// Output:
	// move {"properties":{"task_id":{"type":"integer","description":"the task to move"},"day":{"type":"integer","maximum":7,"minimum":1}},"additionalProperties":false,"type":"object","required":["task_id","day"]}
	// invalid arguments for tool move: field day: must be an integer; got "Monday"
	// move(task_id: 4, day: 2)
	// task 4 moved to day 2
}
