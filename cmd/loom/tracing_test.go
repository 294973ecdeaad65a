package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestTracing(t *testing.T) {
	ctx := context.Background()
	if tp, _, err := tracing(ctx, "", nil); err != nil || tp != nil {
		t.Errorf("unset: %v, %v; want no provider", tp, err)
	}
	if _, _, err := tracing(ctx, "zipkin", nil); err == nil || !strings.Contains(err.Error(), "want otlp, console or none") {
		t.Errorf("unknown exporter: %v", err)
	}
	var buf bytes.Buffer
	tp, stop, err := tracing(ctx, "console", &buf)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(ctx, "hello")
	span.End()
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"Name":"hello"`) {
		t.Errorf("console exporter wrote %q", buf.String())
	}
}
