package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunResumeAcrossInvocations runs the demo to its question and answers
// it in a second invocation on the same file, as a second process would.
func TestRunResumeAcrossInvocations(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	ctx := context.Background()
	var out strings.Builder
	if err := run(ctx, []string{"run", "demo", "-db", db, "-thread", "t1", "-input", `{"title":"launch"}`}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "waiting at confirm") || !strings.Contains(out.String(), `"interrupted"`) {
		t.Fatalf("first run did not stop at the question:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"run", "demo", "-db", db, "-thread", "t1", "-json", "-resume", `{"accept":true,"note":"ok"}`}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last struct {
		Kind string `json:"kind"`
		Data struct {
			Status string `json:"status"`
			State  struct {
				Approved bool   `json:"approved"`
				Note     string `json:"note"`
			} `json:"state"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Kind != "run_end" || last.Data.Status != "done" || !last.Data.State.Approved || last.Data.State.Note != "ok" {
		t.Errorf("last event %+v, want run_end done and approved", last)
	}
	// Nothing is pending any more.
	err := run(ctx, []string{"run", "demo", "-db", db, "-thread", "t1", "-resume", `{"accept":true}`}, &out)
	if err == nil || !strings.Contains(err.Error(), "no pending interrupt") {
		t.Errorf("resume with nothing pending: %v", err)
	}
	for _, bad := range [][]string{
		{"run", "demo", "-db", db, "-input", `{"title":`},
		{"run", "demo", "-db", db},
		{"run", "nope", "-db", db, "-continue"},
		{"graph", "svg", "demo"},
	} {
		if err := run(ctx, bad, &out); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestGraphCommands(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"graph", "scenarios", "demo"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "START → draft → check → fix → confirm (after 3×) → END") {
		t.Errorf("scenarios:\n%s", out.String())
	}
}
