package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
)

// A thread stored by another version of the agent's graph is refused
// with 409 and the runtime's message, which names the versions; the run
// that met it wrote nothing, so it leaves the thread as it was.
func TestGraphVersionError(t *testing.T) {
	err := fmt.Errorf("graph essay: thread t1: %w: it was written by version 5, and this graph is version 2, which is older", graph.ErrVersion)
	ae := toAPI(err)
	if ae.status != http.StatusConflict || ae.code != "graph_version" || !strings.Contains(ae.message, "version 5") {
		t.Errorf("toAPI = %d %s %q, want 409 graph_version naming version 5", ae.status, ae.code, ae.message)
	}
	if code := refused(err); code != "graph_version" {
		t.Errorf("refused = %q, want graph_version", code)
	}
}
