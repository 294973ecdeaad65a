package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// command is one of loom's commands, as its help shows it.
type command struct {
	name string
	// args are the arguments it takes before its optional flags (and any
	// flag that is required), after those that it takes after them.
	args, after string
	// does says what it does in a line; about, if set, says more in its
	// own help.
	does, about string
	// run runs it; for -h it prints its flags as the flag package does
	// and runs nothing else.
	run func(ctx context.Context, args []string, out io.Writer) error
}

// commands are loom's commands in the order its help lists them.
func commands() []command {
	return []command{
		{name: "serve", does: "serve every agent over HTTP: the LangGraph and OpenAI APIs and the web page", run: serve},
		{name: "migrate", does: "apply the database's migrations ahead of time, as a deploy step", run: migrate},
		{name: "agents", does: "list the agents", run: listAgents},
		{name: "graph", args: "mermaid|scenarios AGENT", does: "draw an agent's graph as a Mermaid flowchart, or list its paths", run: graphCommand},
		{name: "run", args: "AGENT", does: "run an agent on the command line, checkpointed in a SQLite file: give one of --input, --resume or --continue", run: runAgent},
		{name: "report", args: "check|render|ocr|skeleton", after: "PATH...", does: "check JasperReports templates (parse, round trip, structural checks, XSD validation) and render them to PNG and PDF", about: reportAbout, run: runReport},
		{name: "eval", args: "intent|schema-recall|conversation …", does: "measure the intent engine on a labelled data set (" + strings.Join(formatNames(), ", ") + "), the analyst's schema recall, or the cabin on labelled conversations", about: evalAbout, run: runEval},
		{name: "bench", does: "measure a running server: turns/s and latency of concurrent conversations with an agent, from this process", about: benchAbout, run: runBench},
		{name: "sql", after: `"STATEMENT"`, does: "run one read-only SQL statement through the guard the agents' tools use", run: runSQL},
		{name: "version", does: "print loom's version", run: printVersion},
		{name: "help", args: "[COMMAND]", does: "show this, or what a command's flags mean"},
	}
}

// findCommand returns the command called name.
func findCommand(name string) (command, bool) {
	cs := commands()
	i := slices.IndexFunc(cs, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return cs[i], true
}

// commandNames lists the commands, for the error that names an unknown one.
func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// topUsage is loom's help: every command with all its flags, then where
// its settings come from.
func topUsage(ctx context.Context) string {
	var b strings.Builder
	b.WriteString("loom runs Loom's agents: as an HTTP server, and on the command line.\n\nusage:\n")
	for _, c := range commands() {
		words := append([]string{"loom", c.name}, strings.Fields(c.args)...)
		for _, f := range flagNames(commandFlags(ctx, c)) {
			if !slices.Contains(words, "--"+f.name) {
				words = append(words, "[--"+strings.TrimSpace(f.name+" "+f.arg)+"]")
			}
		}
		words = append(words, strings.Fields(c.after)...)
		b.WriteString(wrap(words, "  ", "        ", 80))
		b.WriteString(wrap(strings.Fields(c.does), "      ", "      ", 80))
	}
	b.WriteString(`
loom help COMMAND (or loom COMMAND --help) says what a command's flags mean.

serve and migrate keep threads, runs and checkpoints in ./loom.db, or in
the database LOOM_DATABASE_URL names: a SQLite file (sqlite:///path or a
plain path) or PostgreSQL (postgres://…), which replicas of serve share;
run checkpoints in the SQLite file --db names (./loom.db). API keys come
from --keys FILE, LOOM_API_KEYS_FILE (one a line) or LOOM_API_KEYS (comma
separated); without keys serve answers on loopback only.
LOOM_ENCRYPTION_KEYS (id:base64key,… of 32-byte keys; the first seals)
encrypts checkpoints and store items at rest for serve and run. A model
is used when LOOM_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a
local endpoint) name one; every agent works without. A run of serve may
choose another model of the same endpoint that LOOM_MODELS lists (comma
separated), and a temperature, with config.configurable (or context)
model and temperature.
`)
	return b.String()
}

// commandUsage is one command's help: its synopsis, what it does, and its
// flags as the flag package describes them.
func commandUsage(ctx context.Context, c command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", strings.Join(strings.Fields("loom "+c.name+" "+c.args+" [flags] "+c.after), " "), c.does)
	if c.about != "" {
		b.WriteString("\n" + c.about + "\n")
	}
	if flags := commandFlags(ctx, c); flags != "" {
		b.WriteString("\nflags:\n" + flags)
	}
	return b.String()
}

// usageHeader is the line the flag package's default usage starts with.
var usageHeader = regexp.MustCompile(`(?m)^Usage of [^\n]*:\n`)

// commandFlags is what c's flag set prints for -h, without its header: each
// command parses its flags first, so asking it for -h runs nothing else.
func commandFlags(ctx context.Context, c command) string {
	if c.run == nil {
		return ""
	}
	var b strings.Builder
	_ = c.run(ctx, []string{"-h"}, &b) // the flag set's ErrHelp
	return usageHeader.ReplaceAllString(b.String(), "")
}

// flagLine matches a flag in the flag package's PrintDefaults: two spaces,
// the flag, and the name of its argument unless it is a switch.
var flagLine = regexp.MustCompile(`(?m)^  -([\w-]+)(?: (\S+))?$`)

// flagNames are the flags in a PrintDefaults text, each with the name of
// its argument ("" for a switch).
func flagNames(defaults string) []struct{ name, arg string } {
	var fs []struct{ name, arg string }
	for _, m := range flagLine.FindAllStringSubmatch(defaults, -1) {
		fs = append(fs, struct{ name, arg string }{m[1], m[2]})
	}
	return fs
}

// wrap joins words with spaces into lines of at most width where it can,
// the first indented by first and the others by rest.
func wrap(words []string, first, rest string, width int) string {
	var b strings.Builder
	cur := first
	for i, w := range words {
		switch {
		case i > 0 && len(cur)+1+len(w) > width:
			b.WriteString(cur + "\n")
			cur = rest + w
		case i > 0:
			cur += " " + w
		default:
			cur += w
		}
	}
	b.WriteString(cur + "\n")
	return b.String()
}

// parseFlags parses args into fs, the flag set of command c: for -h it
// prints the flags to out, as the flag package does, and returns
// flag.ErrHelp; an unknown or malformed flag is a usage error that lists
// c's flags.
func parseFlags(c string, fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	if err == flag.ErrHelp {
		fmt.Fprint(out, b.String())
		return err
	}
	return usageErrorf("%s: %v; its flags are:\n%s", c, err, strings.TrimRight(b.String(), "\n"))
}

// usageErrorf is an error in how loom was called: it exits 2, as the flag
// package does.
func usageErrorf(format string, args ...any) error {
	return &exitError{2, "loom: " + fmt.Sprintf(format, args...)}
}
