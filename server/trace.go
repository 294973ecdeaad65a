package server

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// tracerName names the server's tracer.
const tracerName = "github.com/loomkit/loom/server"

// runTrace turns one run's events into OpenTelemetry spans: a span for the
// run and a child span for each node step. With no tracer provider set
// (the default) the spans cost next to nothing and go nowhere.
type runTrace struct {
	ctx  context.Context
	run  trace.Span
	node trace.Span
}

func (s *Server) startTrace(r *run) *runTrace {
	tp := s.opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	ctx, span := tp.Tracer(tracerName).Start(r.ctx, "run "+r.agent, trace.WithAttributes(
		attribute.String("loom.agent", r.agent),
		attribute.String("loom.thread", r.thread),
		attribute.String("loom.run", r.id),
	))
	return &runTrace{ctx: ctx, run: span}
}

// observe records a graph event.
func (t *runTrace) observe(e graph.Event) {
	switch e.Kind {
	case graph.KindNodeStart:
		t.endNode()
		_, t.node = t.run.TracerProvider().Tracer(tracerName).Start(t.ctx, "node "+e.Node, trace.WithAttributes(
			attribute.String("loom.node", e.Node),
			attribute.Int("loom.step", e.Step),
		))
	case graph.KindNodeEnd:
		if t.node != nil && e.Checkpoint != "" {
			t.node.SetAttributes(attribute.String("loom.checkpoint", e.Checkpoint))
		}
		t.endNode()
	case graph.KindInterrupt:
		attrs := []attribute.KeyValue{attribute.String("loom.node", e.Node)}
		if i, ok := e.Data.(*checkpoint.Interrupt); ok {
			attrs = append(attrs, attribute.String("loom.interrupt", i.ID))
		}
		t.run.AddEvent("interrupt", trace.WithAttributes(attrs...))
		t.endNode()
	case graph.KindError:
		if e.Err != nil {
			if t.node != nil {
				t.node.RecordError(e.Err)
				t.node.SetStatus(codes.Error, e.Err.Error())
			}
			t.run.RecordError(e.Err)
		}
	}
}

func (t *runTrace) endNode() {
	if t.node != nil {
		t.node.End()
		t.node = nil
	}
}

// finish ends the run's span with the run's outcome.
func (t *runTrace) finish(status, errMsg string, steps int) {
	t.endNode()
	t.run.SetAttributes(attribute.String("loom.status", status), attribute.String("loom.steps", strconv.Itoa(steps)))
	if errMsg != "" {
		t.run.SetStatus(codes.Error, errMsg)
	}
	t.run.End()
}
