package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// A server for the demo agent on a loopback port: a LangGraph client
// (here plain HTTP) starts a run, which stops at the demo's question.
func Example() {
	var agents server.Registry
	agents.Register(server.Agent{
		Name:        "demo",
		Description: "checklist with an approval",
		Build:       server.Compile(demo.Graph()),
	})
	dir, _ := os.MkdirTemp("", "loom-example")
	defer os.RemoveAll(dir)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := server.New(ctx, server.Options{
		Agents:   &agents,
		Database: filepath.Join(dir, "loom.db"),
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error)
	go func() { served <- srv.Serve(ctx, ln) }()

	url := "http://" + ln.Addr().String()
	resp, _ := http.Post(url+"/threads/t1/runs/wait", "application/json",
		strings.NewReader(`{"assistant_id":"demo","input":{"title":"launch"},"if_not_exists":"create"}`))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Items     []string `json:"items"`
		Interrupt []struct {
			Value demo.Question `json:"value"`
		} `json:"__interrupt__"`
	}
	json.Unmarshal(b, &out)
	fmt.Println(out.Items)
	fmt.Println(out.Interrupt[0].Value.Summary)

	stop() // graceful shutdown
	fmt.Println(<-served)
	// Output:
	// [Write the launch notes Check the launch build Tell the team]
	// Checklist "launch": 3 items after 3 correction rounds. Approve?
	// <nil>
}

// An agent's own endpoints, beside the API: Routes returns a handler that
// the server mounts under /api/v1/<name>/, behind the same keys, limits
// and error responses, with Caller saying whose key called.
func ExampleAgent_routes() {
	var agents server.Registry
	agents.Register(server.Agent{
		Name:  "demo",
		Build: server.Compile(demo.Graph()),
		Routes: func(srv *server.Server, runner graph.Runner) http.Handler {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /api/v1/demo/hello", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "hello from %s, caller %q", runner.Name(), server.Caller(r.Context()))
			})
			return mux
		},
	})
	dir, _ := os.MkdirTemp("", "loom-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := server.New(ctx, server.Options{Agents: &agents, Database: filepath.Join(dir, "loom.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ctx, ln)
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/demo/hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(b))
	// Output: 200 hello from demo, caller ""
}
