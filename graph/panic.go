package graph

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a panic the runtime recovered in a node or a fan-out
// branch. The run fails with it; it is logged, with its stack, where it
// was recovered.
type PanicError struct {
	// Value is what the code panicked with.
	Value any
	// Stack is the goroutine's stack where it panicked, from the
	// panicking function down.
	Stack []byte
}

// Error gives the panic's value and its stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// recovered turns the value p recovered in where into a *PanicError with
// the stack, and logs it. Call it in the deferred function that recovered.
func recovered(ctx context.Context, where string, p any) error {
	stack := panicStack(debug.Stack())
	attrs := []any{"in", where, "panic", fmt.Sprint(p), "stack", string(stack)}
	if rc := runOf(ctx); rc != nil {
		attrs = append(attrs, "thread", rc.thread, "run", rc.run, "node", rc.node, "step", rc.step)
	}
	slog.ErrorContext(ctx, "graph: recovered a panic", attrs...)
	return &PanicError{Value: p, Stack: stack}
}

// panicStack cuts a debug.Stack taken in a deferred recover to the frames
// from the panicking function down: everything after the runtime's panic
// frame. It keeps the whole stack when there is no such frame.
func panicStack(stack []byte) []byte {
	i := bytes.Index(stack, []byte("\npanic("))
	if i < 0 {
		return stack
	}
	rest := stack[i+1:]
	// Skip the panic( line and its file line.
	for range 2 {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return stack
		}
		rest = rest[j+1:]
	}
	return bytes.TrimRight(rest, "\n")
}
