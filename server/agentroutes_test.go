package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// routed is an agent with routes of its own, which tell who called and
// which graph the server built.
func routed(name, prefix string) server.Agent {
	return server.Agent{
		Name: name, Description: "the demo checklist, with a route of its own",
		Build: server.Compile(demo.Graph()),
		Routes: func(srv *server.Server, r graph.Runner) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				fmt.Fprintf(w, "%s %s by %s on %v", req.URL.Path, r.Name(), server.Caller(req.Context()), srv.Saver() == r.Saver())
			})
		},
		RoutesPrefix: prefix,
	}
}

// An agent's Routes are served by New under its prefix, behind the keys.
func TestHandleAPIAgentRoutes(t *testing.T) {
	var reg server.Registry
	if err := reg.Register(routed("checklist", "")); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"),
		Keys: []string{"key-a"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	url := servertest.Serve(t, srv) + "/api/v1/checklist/items"
	for _, key := range []string{"", "key-a"} {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case key == "" && resp.StatusCode != http.StatusUnauthorized:
			t.Errorf("without a key: HTTP %d %s", resp.StatusCode, body)
		case key != "" && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "/api/v1/checklist/items demo by key:") || !strings.HasSuffix(string(body), " on true")):
			t.Errorf("with a key: HTTP %d %q, want the path, the graph, the caller and the server's saver", resp.StatusCode, body)
		}
	}
}

// A prefix that is not a path ending in "/", or that another agent holds,
// is New's error, not a panic.
func TestBadInputAgentRoutes(t *testing.T) {
	for name, agents := range map[string][]server.Agent{
		"not a path": {routed("a", "api/a")},
		"no slash":   {routed("a", "/api/a")},
		"held twice": {routed("a", "/api/v1/shared/"), routed("b", "/api/v1/shared/")},
	} {
		var reg server.Registry
		for _, a := range agents {
			if err := reg.Register(a); err != nil {
				t.Fatal(err)
			}
		}
		srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"), Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			srv.Close()
			t.Errorf("%s: New accepted %+v", name, agents)
		} else if !strings.Contains(err.Error(), "routes prefix") {
			t.Errorf("%s: %v, want an error naming the routes prefix", name, err)
		}
	}
}
