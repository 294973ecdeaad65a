package graph

import "context"

// Thread returns the id of the thread the run of a node's context is on,
// or "" outside a run. A node that reads its thread's history (an undo
// that goes back to an earlier turn, say) finds it with this and the
// graph's saver.
func Thread(ctx context.Context) string {
	if rc := runOf(ctx); rc != nil {
		return rc.thread
	}
	return ""
}
