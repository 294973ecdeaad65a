package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/contract"
)

type placeArgs struct {
	TaskID int    `json:"task_id" jsonschema:"description=the task to place"`
	Day    int    `json:"day" jsonschema:"minimum=1,maximum=7"`
	Slot   string `json:"slot" jsonschema:"enum=morning,enum=afternoon,enum=evening"`
	Note   string `json:"note,omitempty"`
}

type placed struct {
	OK  bool   `json:"ok"`
	Msg string `json:"msg"`
}

func placeTool() Tool {
	return New("place", "Place a task in a free slot.", Write,
		func(ctx context.Context, a placeArgs) (placed, error) {
			if a.TaskID == 13 {
				return placed{}, errors.New("task 13 is locked")
			}
			return placed{OK: true, Msg: fmt.Sprintf("task %d on day %d %s", a.TaskID, a.Day, a.Slot)}, nil
		})
}

type noArgs struct{}

func overviewTool() Tool {
	return New("get_overview", "Overview of the week.", Read,
		func(ctx context.Context, _ noArgs) (string, error) { return "5 days, 3 pending tasks", nil })
}

func TestCall(t *testing.T) {
	place := placeTool()
	tests := []struct {
		name, args string
		want       string // content, or error text
		err        error
	}{
		{"ok", `{"task_id":1,"day":3,"slot":"evening"}`, `{"ok":true,"msg":"task 1 on day 3 evening"}`, nil},
		{"tolerated slips", "```json\n{\"task_id\":1,\"day\":3,\"slot\":\"evening\",}\n```", `{"ok":true,"msg":"task 1 on day 3 evening"}`, nil},
		{"wrong type", `{"task_id":1,"day":"3","slot":"evening"}`,
			`invalid arguments for tool place: field day: must be an integer; got "3"`, ErrInvalidArgs},
		{"enum", `{"task_id":1,"day":3,"slot":"night"}`,
			`invalid arguments for tool place: field slot: must be one of morning, afternoon, evening; got "night"`, ErrInvalidArgs},
		{"missing", `{"day":3,"slot":"evening"}`,
			`invalid arguments for tool place: field task_id: required but missing`, ErrInvalidArgs},
		{"range", `{"task_id":1,"day":8,"slot":"evening"}`,
			`invalid arguments for tool place: field day: must be <= 7; got 8`, ErrInvalidArgs},
		{"malformed", `{"task_id":1,"day":3,"slot":"evening"`,
			`invalid arguments for tool place: invalid JSON at offset`, contract.ErrSyntax},
		{"empty", ``, "invalid arguments for tool place:\nfield task_id: required but missing\nfield day: required but missing\nfield slot: required but missing", ErrInvalidArgs},
		{"tool error", `{"task_id":13,"day":3,"slot":"evening"}`, `tool place: task 13 is locked`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := place.Call(context.Background(), json.RawMessage(tt.args))
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("Call error = %v, want %v", err, tt.err)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), tt.want) {
					t.Fatalf("Call error = %q, want %q", err, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("Call = %s, want %s", got, tt.want)
			}
		})
	}
	out, err := overviewTool().Call(context.Background(), nil)
	if err != nil || out != "5 days, 3 pending tasks" {
		t.Fatalf("no-arg tool: %q, %v", out, err)
	}
}

func TestDefinition(t *testing.T) {
	d := placeTool().Definition()
	var schema struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if d.Name != "place" || schema.Type != "object" || !reflect.DeepEqual(schema.Required, []string{"task_id", "day", "slot"}) {
		t.Fatalf("definition = %s %+v", d.Name, schema)
	}
	if !strings.Contains(string(schema.Properties["slot"]), `"enum":["morning","afternoon","evening"]`) {
		t.Fatalf("slot schema = %s", schema.Properties["slot"])
	}
	b, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(b), `"parameters":{"`) {
		t.Fatalf("json.Marshal(Definition) = %s, %v", b, err)
	}
}

func TestNewPanics(t *testing.T) {
	tests := []struct {
		name string
		make func()
	}{
		{"bad name", func() { New("bad name", "", Read, func(context.Context, noArgs) (string, error) { return "", nil }) }},
		{"non-struct args", func() { New("x", "", Read, func(context.Context, string) (string, error) { return "", nil }) }},
		{"bad kind", func() { New("x", "", Kind("delete"), func(context.Context, noArgs) (string, error) { return "", nil }) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.make()
		})
	}
}

func TestNewRaw(t *testing.T) {
	echo, err := NewRaw("echo", "Echo.", Read, json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil })
	if err != nil {
		t.Fatal(err)
	}
	if out, err := echo.Call(context.Background(), json.RawMessage(`{"q":"hi",}`)); err != nil || out != `{"q":"hi"}` {
		t.Fatalf("Call = %s, %v", out, err)
	}
	if _, err := echo.Call(context.Background(), json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("Call error = %v", err)
	}
	if _, err := NewRaw("bad", "", Read, json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"http://x"}}}`), nil); err == nil {
		t.Fatal("NewRaw accepted an unresolvable $ref")
	}
}

func TestConfirm(t *testing.T) {
	place := placeTool()
	req, err := place.ConfirmRequest(context.Background(), json.RawMessage(`{"task_id":12,"day":3,"slot":"evening",}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Tool != "place" || string(req.Args) != `{"task_id":12,"day":3,"slot":"evening"}` ||
		req.Summary != `place(task_id: 12, day: 3, slot: "evening")` {
		t.Fatalf("request = %+v", req)
	}
	if _, err := place.ConfirmRequest(context.Background(), json.RawMessage(`{"day":3}`)); !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("bad args: %v", err)
	}
	custom := New("place", "", Write, func(context.Context, placeArgs) (string, error) { return "", nil },
		WithSummary(func(_ context.Context, a placeArgs) string {
			return fmt.Sprintf("Put task %d on day %d (%s)", a.TaskID, a.Day, a.Slot)
		}))
	req, _ = custom.ConfirmRequest(context.Background(), json.RawMessage(`{"task_id":12,"day":3,"slot":"evening"}`))
	if req.Summary != "Put task 12 on day 3 (evening)" {
		t.Fatalf("custom summary = %q", req.Summary)
	}
	if got := req.Rejected(" too late "); got != "The user rejected Put task 12 on day 3 (evening); it did not run. Reason: too late" {
		t.Fatalf("Rejected = %q", got)
	}
	var back ConfirmRequest
	b, _ := json.Marshal(req)
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		tool   Tool
		want   bool
	}{
		{"write asks by default", Policy{}, placeTool(), true},
		{"read never asks", Policy{}, overviewTool(), false},
		{"auto-approved write", Policy{AutoApprove: []string{"place"}}, placeTool(), false},
		{"other write still asks", Policy{AutoApprove: []string{"move"}}, placeTool(), true},
	}
	for _, tt := range tests {
		if got := tt.policy.NeedsConfirm(tt.tool); got != tt.want {
			t.Errorf("%s: NeedsConfirm = %v, want %v", tt.name, got, tt.want)
		}
	}
}
