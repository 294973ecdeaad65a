// Command loom runs Loom's agents: as a server, and on the command line.
//
//	loom serve [--addr HOST:PORT] [--keys FILE]
//	loom migrate [--db URL]
//	loom version
//	loom agents
//	loom graph mermaid|scenarios AGENT
//	loom run AGENT [-db FILE] [-thread ID] [-input JSON | -resume JSON | -continue] [-json]
//	loom eval intent --train FILE [--test FILE] [--format clinc150|smp2019|banking77|csv] [--json]
//	loom sql --db URL [--json] [--timeout 30s] [--max-rows N] "STATEMENT"
//
// serve keeps threads, runs and checkpoints in ./loom.db, or in the
// database LOOM_DATABASE_URL names: a SQLite file (sqlite:///path or a
// plain path) or PostgreSQL (postgres://…), which replicas of serve share;
// migrate applies that database's migrations ahead of time. API keys
// come from --keys FILE or LOOM_API_KEYS_FILE (one a line) or LOOM_API_KEYS
// (comma separated); without keys it serves loopback only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		code, msg := exitStatus(err)
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(code)
	}
}

const usage = `usage:
  loom serve [--addr HOST:PORT] [--keys FILE]
  loom migrate [--db URL]
  loom version
  loom agents
  loom graph mermaid|scenarios AGENT
  loom run AGENT [-db FILE] [-thread ID] [-input JSON | -resume JSON | -continue] [-json]
  loom eval intent --train FILE [--test FILE] [--format clinc150|smp2019|banking77|csv] [--json]
  loom sql --db URL [--json] [--timeout 30s] [--max-rows N] "STATEMENT"`

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(out, "loom", version())
		return nil
	case "agents":
		for _, a := range agents().All() {
			fmt.Fprintf(out, "%-10s %s\n", a.Name, a.Description)
		}
		return nil
	case "serve":
		return serve(ctx, args[1:], out)
	case "migrate":
		return migrate(ctx, args[1:], out)
	case "graph":
		if len(args) != 3 || (args[1] != "mermaid" && args[1] != "scenarios") {
			return errors.New(usage)
		}
		r, err := lookup(args[2], nil)
		if err != nil {
			return err
		}
		if args[1] == "mermaid" {
			fmt.Fprint(out, r.Mermaid())
			return nil
		}
		for i, s := range r.Scenarios() {
			fmt.Fprintf(out, "%d. %s\n", i+1, s)
		}
		return nil
	case "run":
		return runAgent(ctx, args[1:], out)
	case "eval":
		return runEval(ctx, args[1:], out)
	case "sql":
		return runSQL(ctx, args[1:], out)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func lookup(name string, saver checkpoint.Saver) (graph.Runner, error) {
	a, ok := agents().Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (see loom agents)", name)
	}
	r, err := a.Build(saver)
	if err != nil {
		return nil, fmt.Errorf("build agent %s: %w", name, err)
	}
	return r, nil
}

func runAgent(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	name := args[0]
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	db := fs.String("db", "loom.db", "SQLite file for checkpoints")
	thread := fs.String("thread", "default", "thread id")
	input := fs.String("input", "", "start a new run with this JSON object as input")
	resume := fs.String("resume", "", "answer the pending question with this JSON value")
	cont := fs.Bool("continue", false, "continue the thread where it stopped")
	asJSON := fs.Bool("json", false, "print events as JSON lines")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var in graph.JSONInput
	switch {
	case *input != "" && *resume == "" && !*cont:
		in.Update = json.RawMessage(*input)
	case *resume != "" && *input == "" && !*cont:
		in.Resume = json.RawMessage(*resume)
	case *cont && *input == "" && *resume == "":
	default:
		return errors.New("give exactly one of -input, -resume, -continue")
	}
	for _, v := range []json.RawMessage{in.Update, in.Resume} {
		if v != nil && !json.Valid(v) {
			return fmt.Errorf("not valid JSON: %s", v)
		}
	}
	saver, err := sqlite.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer saver.Close()
	r, err := lookup(name, saver)
	if err != nil {
		return err
	}
	slog.Debug("run", "agent", name, "thread", *thread, "db", *db)
	enc := json.NewEncoder(out)
	for e, err := range r.StreamJSON(ctx, *thread, in) {
		if err != nil {
			return err
		}
		if *asJSON {
			if err := enc.Encode(eventJSON(e)); err != nil {
				return err
			}
			continue
		}
		printEvent(out, e)
	}
	return nil
}

type jsonEvent struct {
	Kind       graph.Kind `json:"kind"`
	Thread     string     `json:"thread"`
	Run        string     `json:"run"`
	Node       string     `json:"node,omitempty"`
	Step       int        `json:"step"`
	Checkpoint string     `json:"checkpoint,omitempty"`
	Data       any        `json:"data,omitempty"`
}

func eventJSON(e graph.Event) jsonEvent {
	return jsonEvent{Kind: e.Kind, Thread: e.Thread, Run: e.Run, Node: e.Node, Step: e.Step, Checkpoint: e.Checkpoint, Data: e.Data}
}

func printEvent(out io.Writer, e graph.Event) {
	switch e.Kind {
	case graph.KindNodeEnd:
		fmt.Fprintf(out, "step %d  %s (%v)\n", e.Step, e.Node, e.Data)
	case graph.KindInterrupt:
		i := e.Data.(*checkpoint.Interrupt)
		fmt.Fprintf(out, "waiting at %s: %s\n  answer with: loom run AGENT -thread %s -resume 'JSON'\n", i.Node, i.Payload, e.Thread)
	case graph.KindRunEnd:
		b, _ := json.MarshalIndent(e.Data, "", "  ")
		fmt.Fprintf(out, "run %s ended:\n%s\n", e.Run, b)
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
