package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMain runs loom's main function instead of the tests when
// LOOM_TEST_MAIN is set, so that the tests can run the command as a
// process and see its exit code and output (loom runs this binary).
func TestMain(m *testing.M) {
	if os.Getenv("LOOM_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// loom runs the command with args in dir (the test's own directory when
// "") and returns its exit code, stdout and stderr.
func loom(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOM_TEST_MAIN=1", "LOOM_API_KEYS=", "LOOM_API_KEYS_FILE=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("loom %q: %v", args, err)
	}
	return code, o.String(), e.String()
}

// Every way of asking for help prints it on stdout and exits 0.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"}, {"-help"}, {"help", "--help"},
		{"serve", "--help"}, {"migrate", "-h"}, {"run", "--help"}, {"run", "demo", "--help"},
		{"eval", "intent", "--help"}, {"eval", "--help"}, {"graph", "--help"}, {"agents", "--help"},
		{"version", "-h"}, {"sql", "--help"}, {"help", "run"}, {"help", "serve"},
	} {
		code, stdout, stderr := loom(t, t.TempDir(), args...)
		if code != 0 || !strings.HasPrefix(stdout, "usage:") && !strings.Contains(stdout, "\nusage:\n") || stderr != "" {
			t.Errorf("loom %q: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
	}
	_, stdout, _ := loom(t, "", "run", "--help")
	for _, want := range []string{"usage: loom run AGENT [flags]", "-input JSON", "-resume JSON", "-continue", "-db FILE", "-thread ID"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("loom run --help lacks %q:\n%s", want, stdout)
		}
	}
	_, stdout, _ = loom(t, "", "eval", "intent", "--help")
	for _, want := range []string{"usage: loom eval intent|schema-recall|conversation … [flags]", "loom eval conversation", "Trains the intent engine", "-format FORMAT", "clinc150, smp2019, banking77, csv", "-remote URL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("loom eval intent --help lacks %q:\n%s", want, stdout)
		}
	}
}

// loom help lists every command with every flag its flag set defines.
func TestTopUsageHasEveryFlag(t *testing.T) {
	_, top, _ := loom(t, "", "help")
	flag := regexp.MustCompile(`(?m)^  -([\w-]+)`)
	for _, c := range commands() {
		if !strings.Contains(top, "loom "+c.name) {
			t.Errorf("loom help lacks the command %s", c.name)
		}
		if c.run == nil {
			continue
		}
		code, help, _ := loom(t, "", c.name, "--help")
		if code != 0 {
			t.Errorf("loom %s --help: exit %d", c.name, code)
		}
		names := flag.FindAllStringSubmatch(help, -1)
		for _, m := range names {
			if !strings.Contains(top, "--"+m[1]+" ") && !strings.Contains(top, "--"+m[1]+"]") {
				t.Errorf("loom help lacks loom %s's flag --%s:\n%s", c.name, m[1], top)
			}
		}
		if c.name == "eval" && len(names) < 7 || c.name == "run" && len(names) != 6 {
			t.Errorf("loom %s --help lists %d flags:\n%s", c.name, len(names), help)
		}
	}
	for _, want := range []string{"[--model]", "[--remote URL]", "[--addr string]", "loom run AGENT [--continue] [--db FILE]"} {
		if !strings.Contains(top, want) {
			t.Errorf("loom help lacks %q:\n%s", want, top)
		}
	}
}

// A command line loom does not understand exits 2 with an error on stderr
// that names what was wrong and lists what would be right.
func TestUsageErrorsNameWhatIsWrong(t *testing.T) {
	agents := strings.Join(agents().Names(), ", ")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"name a command", "loom run AGENT"}},
		{[]string{"--bogus"}, []string{`unknown command "--bogus"`, "serve, migrate, agents"}},
		{[]string{"nope"}, []string{`unknown command "nope"`, "eval, bench, sql, version, help"}},
		{[]string{"run"}, []string{"name an agent: " + agents}},
		{[]string{"run", "nope"}, []string{`unknown agent "nope"; the agents are ` + agents}},
		{[]string{"run", "nope", "--input", `{}`}, []string{`unknown agent "nope"`}},
		{[]string{"run", "demo", "--bogus"}, []string{"flag provided but not defined: -bogus", "-input JSON", "-resume JSON"}},
		{[]string{"run", "demo"}, []string{"give one of --input JSON, --resume JSON or --continue"}},
		{[]string{"run", "demo", "--input", `{"title":`}, []string{"not valid JSON"}},
		{[]string{"run", "demo", "-input", `{"titel":"x"}`}, []string{`input field "titel" is not one of agent demo's: title`}},
		{[]string{"run", "demo", "--input", `["launch"]`}, []string{"input must be a JSON object"}},
		{[]string{"graph", "svg", "demo"}, []string{`unknown drawing "svg"`, "mermaid and scenarios"}},
		{[]string{"graph", "mermaid", "nope"}, []string{`unknown agent "nope"`, agents}},
		{[]string{"graph"}, []string{"mermaid or scenarios", agents}},
		{[]string{"agents", "extra"}, []string{`agents takes no arguments; got "extra"`}},
		{[]string{"eval"}, []string{"name what to evaluate: intent"}},
		{[]string{"eval", "sql"}, []string{`unknown evaluation "sql"`}},
		{[]string{"eval", "intent"}, []string{"--train FILE is required"}},
		{[]string{"eval", "intent", "--train", "x.json", "--format", "xyz"}, []string{`unknown format "xyz"; the formats are clinc150, smp2019, banking77, csv`}},
		{[]string{"eval", "intent", "--bogus"}, []string{"flag provided but not defined: -bogus", "-train FILE"}},
	} {
		dir := t.TempDir()
		code, stdout, stderr := loom(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "loom: ") {
			t.Errorf("loom %q: exit %d, want 2\nstdout: %s\nstderr: %s", c.args, code, stdout, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("loom %q: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "loom.db")); err == nil {
			t.Errorf("loom %q wrote loom.db", c.args)
		}
	}
}

// A data set loom cannot read is an error that names the formats it can.
func TestEvalNamesTheFormats(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "other.json")
	if err := os.WriteFile(data, []byte(`[{"question":"a","label":"x"},{"question":"b","label":"y"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := loom(t, dir, "eval", "intent", "--train", data)
	for _, want := range []string{"smp2019: item 0 has no text or no domain", "the formats are clinc150, smp2019, banking77, csv"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 1 and %q:\n%s", code, want, stderr)
		}
	}
}

// The command printed after a question runs as shown: through a shell, it
// answers the question.
func TestPrintedResumeCommandRuns(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh to run the printed command in: %v", err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "it's here.db") // a quote and a space to quote
	code, stdout, stderr := loom(t, dir, "run", "demo", "--db", db, "--thread", "t 1", "--input", `{"title":"launch"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, line, ok := strings.Cut(stdout, "answer with: ")
	line, _, _ = strings.Cut(line, "\n")
	want := `loom run demo --db '` + dir + `/it'\''s here.db' --thread 't 1' --resume '{"accept":true,"note":""}'`
	if !ok || line != want {
		t.Fatalf("answer line %q, want %q\n%s", line, want, stdout)
	}
	// Run the line as a shell would, with loom this test binary.
	self, _ := os.Executable()
	cmd := exec.Command(sh, "-c", `loom() { "$LOOM" "$@"; }; `+line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOM_TEST_MAIN=1", "LOOM="+self)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if !strings.Contains(string(out), `"approved": true`) || !strings.Contains(string(out), "run ") {
		t.Errorf("the printed command did not approve the checklist:\n%s", out)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"demo":        "demo",
		"a b":         "'a b'",
		`{"a":true}`:  `'{"a":true}'`,
		"it's":        `'it'\''s'`,
		"":            "''",
		"$HOME;rm -r": "'$HOME;rm -r'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Every agent loom serves refuses an input field its input type does not
// have, naming it, and takes an empty input.
func TestEveryAgentRefusesUnknownInputFields(t *testing.T) {
	for _, a := range agents().All() {
		if err := a.CheckInput([]byte(`{"no_such_field":1}`)); err == nil || !strings.Contains(err.Error(), `"no_such_field"`) {
			t.Errorf("agent %s: unknown field: %v", a.Name, err)
		}
		if err := a.CheckInput([]byte(`{}`)); err != nil {
			t.Errorf("agent %s: empty input: %v", a.Name, err)
		}
	}
}
