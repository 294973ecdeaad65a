package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing builds the trace provider that OTEL_TRACES_EXPORTER names:
// "otlp" (OTLP over HTTP, set up by the standard OTEL_EXPORTER_OTLP_*
// variables), "console" (spans as JSON on w), or "none" or unset (off:
// nil provider). The returned function flushes and stops the provider.
func tracing(ctx context.Context, exporter string, w io.Writer) (trace.TracerProvider, func(context.Context) error, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch exporter {
	case "", "none":
		return nil, func(context.Context) error { return nil }, nil
	case "otlp":
		exp, err = otlptracehttp.New(ctx)
	case "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(w))
	default:
		return nil, nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp, console or none", exporter)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("trace exporter %s: %w", exporter, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	return tp, tp.Shutdown, nil
}

// tracingFromEnv is tracing with the exporter from the environment.
func tracingFromEnv(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error) {
	return tracing(ctx, os.Getenv("OTEL_TRACES_EXPORTER"), os.Stderr)
}
