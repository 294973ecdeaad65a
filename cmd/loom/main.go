// Command loom runs Loom's agents: as an HTTP server (loom serve), and on
// the command line (loom run, loom graph); it also applies the database's
// migrations (loom migrate), measures the intent engine (loom eval intent)
// and runs guarded read-only SQL (loom sql). `loom help` lists every
// command with its flags; `loom help COMMAND` or `loom COMMAND --help`
// says what a command's flags mean.
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
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
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

// usage ends the errors of a command line loom does not understand.
const usage = "(loom help lists the commands and their flags)"

// run runs the command line args, printing to out. `loom help`, `loom
// --help` and `loom CMD --help` print help to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("name a command\n%s", topUsage(ctx))
	}
	if isHelp(args[0]) || args[0] == "help" {
		if len(args) < 2 || isHelp(args[1]) {
			fmt.Fprint(out, topUsage(ctx))
			return nil
		}
		args = []string{args[1], "--help"}
	}
	c, ok := findCommand(args[0])
	if !ok || c.run == nil {
		return usageErrorf("unknown command %q; the commands are %s %s", args[0], commandNames(), usage)
	}
	if slices.ContainsFunc(args[1:], isHelp) {
		fmt.Fprint(out, commandUsage(ctx, c))
		return nil
	}
	err := c.run(ctx, args[1:], out)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed the command's flags
	}
	return err
}

// noArgs refuses arguments to command c, which takes none.
func noArgs(c string, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments; got %q %s", c, args[0], usage)
	}
	return nil
}

func printVersion(_ context.Context, args []string, out io.Writer) error {
	if err := noArgs("version", args); err != nil {
		return err
	}
	fmt.Fprintln(out, "loom", version())
	return nil
}

func listAgents(_ context.Context, args []string, out io.Writer) error {
	if err := noArgs("agents", args); err != nil {
		return err
	}
	for _, a := range agents().All() {
		fmt.Fprintf(out, "%-10s %s\n", a.Name, a.Description)
	}
	return nil
}

func graphCommand(ctx context.Context, args []string, out io.Writer) error {
	if len(args) != 2 {
		return usageErrorf("graph: give a drawing (mermaid or scenarios) and an agent (%s) %s", agentNames(), usage)
	}
	if args[0] != "mermaid" && args[0] != "scenarios" {
		return usageErrorf("graph: unknown drawing %q; the drawings are mermaid and scenarios", args[0])
	}
	a, err := findAgent(args[1])
	if err != nil {
		return err
	}
	// The graph is drawn from an agent built on a scratch database.
	dir, err := os.MkdirTemp("", "loom-graph-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, closeDB, err := buildAgent(ctx, a, filepath.Join(dir, "loom.db"))
	if err != nil {
		return err
	}
	defer closeDB()
	if args[0] == "mermaid" {
		fmt.Fprint(out, r.Mermaid())
		return nil
	}
	for i, s := range r.Scenarios() {
		fmt.Fprintf(out, "%d. %s\n", i+1, s)
	}
	return nil
}

// agentNames lists the agents, for the errors that ask for one.
func agentNames() string {
	return strings.Join(agents().Names(), ", ")
}

// findAgent returns the agent called name.
func findAgent(name string) (server.Agent, error) {
	a, ok := agents().Get(name)
	if !ok {
		return a, usageErrorf("unknown agent %q; the agents are %s", name, agentNames())
	}
	return a, nil
}

// buildAgent compiles a's graph on the SQLite file path, with the agent's
// own tables, sealed as loom serve seals them when LOOM_ENCRYPTION_KEYS
// is set; done closes the file.
func buildAgent(ctx context.Context, a server.Agent, path string) (r graph.Runner, done func() error, err error) {
	ring, err := seal.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	var opts []store.Option
	if ring != nil {
		opts = append(opts, store.WithCodec(ring))
	}
	db, err := store.Open(ctx, path, opts...)
	if err != nil {
		return nil, nil, err
	}
	if err = db.Migrate(ctx, a.Name, a.Migrations); err == nil {
		r, err = a.Build(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("build agent %s: %w", a.Name, err)
	}
	return r, db.Close, nil
}

// defaultDB is the SQLite file loom run checkpoints in.
const defaultDB = "loom.db"

func runAgent(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	db := fs.String("db", defaultDB, "SQLite `FILE` for checkpoints")
	thread := fs.String("thread", "default", "thread `ID`")
	input := fs.String("input", "", "start a new run with this `JSON` object as input")
	resume := fs.String("resume", "", "answer the pending question with this `JSON` value")
	cont := fs.Bool("continue", false, "continue the thread where it stopped")
	asJSON := fs.Bool("json", false, "print events as JSON lines")
	// The agent comes first, or after the flags.
	if err := parseFlags("run", fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("run: name an agent: %s %s", agentNames(), usage)
	}
	name := fs.Arg(0)
	if err := parseFlags("run", fs, fs.Args()[1:], out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("run: unexpected argument %q after the flags %s", fs.Arg(0), usage)
	}
	a, err := findAgent(name)
	if err != nil {
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
		return usageErrorf("run: give one of --input JSON, --resume JSON or --continue")
	}
	for _, v := range []json.RawMessage{in.Update, in.Resume} {
		if v != nil && !json.Valid(v) {
			return usageErrorf("run: not valid JSON: %s", v)
		}
	}
	if in.Update != nil {
		if err := a.CheckInput(in.Update); err != nil {
			return usageErrorf("run: %v", err)
		}
	}
	r, closeDB, err := buildAgent(ctx, a, *db)
	if err != nil {
		return err
	}
	defer closeDB()
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
		printEvent(out, e, name, *db)
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

// printEvent prints e of a run of agent on the SQLite file db: a question
// with the command that answers it.
func printEvent(out io.Writer, e graph.Event, agent, db string) {
	switch e.Kind {
	case graph.KindNodeEnd:
		fmt.Fprintf(out, "step %d  %s (%v)\n", e.Step, e.Node, e.Data)
	case graph.KindInterrupt:
		i := e.Data.(*checkpoint.Interrupt)
		fmt.Fprintf(out, "waiting at %s: %s\n  answer with: %s\n", i.Node, i.Payload, resumeCommand(agent, db, e.Thread, i.Schema))
	case graph.KindRunEnd:
		b, _ := json.MarshalIndent(e.Data, "", "  ")
		fmt.Fprintf(out, "run %s ended:\n%s\n", e.Run, b)
	}
}

// resumeCommand is the loom run command line that answers a question of
// agent on thread, as a shell runs it: the answer an example of the
// schema's shape (switches true, text empty).
func resumeCommand(agent, db, thread string, schema json.RawMessage) string {
	args := []string{"loom", "run", agent}
	if db != defaultDB {
		args = append(args, "--db", db)
	}
	args = append(args, "--thread", thread, "--resume", string(exampleAnswer(schema)))
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// exampleAnswer is a value of the JSON schema's shape: an object with each
// of its properties, true for a boolean, "" for a string, 0, [] or {};
// {} when the schema does not say.
func exampleAnswer(schema json.RawMessage) json.RawMessage {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return json.RawMessage("{}")
	}
	switch s.Type {
	case "boolean":
		return json.RawMessage("true")
	case "string":
		return json.RawMessage(`""`)
	case "integer", "number":
		return json.RawMessage("0")
	case "array":
		return json.RawMessage("[]")
	}
	v := map[string]json.RawMessage{}
	for name, p := range s.Properties {
		v[name] = exampleAnswer(p)
	}
	b, _ := json.Marshal(v) // sorted keys
	return b
}

// shellSafe matches the words a POSIX shell takes as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell: in single quotes, a quote inside
// ending them, escaped, and starting them again.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
