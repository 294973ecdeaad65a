package server_test

import (
	"context"
	"slices"
	"testing"

	"github.com/loomkit/loom/server"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraces checks that a run gives a span for the run and one per node
// step, children of the run's span.
func TestTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ts := startServer(t, server.Options{TracerProvider: tp})
	thread := createThread(t, ts.URL, "")
	if st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "launch"}}); st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}

	var run sdktrace.ReadOnlySpan
	var nodes []string
	for _, s := range rec.Ended() {
		switch {
		case s.Name() == "run demo":
			run = s
		case len(s.Name()) > 5 && s.Name()[:5] == "node ":
			nodes = append(nodes, s.Name()[5:])
		}
	}
	if run == nil {
		t.Fatal("no run span")
	}
	want := []string{"draft", "check", "fix", "check", "fix", "check", "fix", "check", "confirm"}
	if !slices.Equal(nodes, want) {
		t.Errorf("node spans %v, want %v", nodes, want)
	}
	for _, s := range rec.Ended() {
		if s.Name() != "run demo" && s.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("span %s is not a child of the run", s.Name())
		}
	}
	if len(run.Events()) != 1 || run.Events()[0].Name != "interrupt" {
		t.Errorf("run span events %v, want the interrupt", run.Events())
	}
}
