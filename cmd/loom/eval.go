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
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/intent/dataset"
	"github.com/loomkit/loom/llm/openai"
)

// evalAbout says what `loom eval intent`, `loom eval schema-recall` and
// `loom eval conversation` measure, in the help of `loom eval`.
var evalAbout = evalIntentAbout + "\n\n" + evalSchemaHelp() + "\n\n" + evalConversationAbout

// evalIntentAbout says what `loom eval intent` measures.
const evalIntentAbout = `Trains the intent engine on FILE and reports in-scope accuracy, macro-F1,
out-of-scope recall and routing time on the test examples: the test file's
test split (else its val split, else all of it); with --train alone, the
train file's val split, or a fixed seeded 80/20 split of it.

--model adds the model stage, asked when the local stages do not execute:
the model of OPENAI_BASE_URL, OPENAI_API_KEY and LOOM_MODEL. --remote adds
a remote classifier: a service at URL that answers POST {"text","top_k",
"labels"} with {"candidates":[{"intent","score"}]}.`

// formats are the data set formats --format names.
var formats = []dataset.Format{dataset.CLINC150, dataset.SMP2019, dataset.BANKING77, dataset.CSV}

func formatNames() []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return names
}

// runEval is `loom eval`: `loom eval intent` (its flags may also be asked
// for with `loom eval -h`) and `loom eval schema-recall`.
func runEval(ctx context.Context, args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		return usageErrorf("eval: name what to evaluate: intent, schema-recall or conversation %s", usage)
	case args[0] == "intent":
		args = args[1:]
	case args[0] == "schema-recall":
		return runEvalSchema(ctx, args[1:], out)
	case args[0] == "conversation":
		return runEvalConversation(ctx, args[1:], out)
	case !isHelp(args[0]):
		return usageErrorf("eval: unknown evaluation %q; there are intent, schema-recall and conversation %s", args[0], usage)
	}
	fs := flag.NewFlagSet("eval intent", flag.ContinueOnError)
	trainPath := fs.String("train", "", "the labelled `FILE` to train on")
	testPath := fs.String("test", "", "the labelled `FILE` to test on")
	format := fs.String("format", "", "the data's `FORMAT`: "+strings.Join(formatNames(), ", ")+"; detected when omitted")
	asJSON := fs.Bool("json", false, "print one JSON object")
	calibrate := fs.Bool("calibrate", true, "tune the decision thresholds on 20% of the training data first")
	withModel := fs.Bool("model", false, "ask the model of OPENAI_BASE_URL, OPENAI_API_KEY and LOOM_MODEL when the local stages do not execute")
	remoteURL := fs.String("remote", "", "a remote classifier's `URL`")
	if err := parseFlags("eval intent", fs, args, out); err != nil {
		return err
	}
	switch {
	case *trainPath == "":
		return usageErrorf("eval intent: --train FILE is required %s", usage)
	case fs.NArg() > 0:
		return usageErrorf("eval intent: unexpected argument %q %s", fs.Arg(0), usage)
	case *format != "" && !slices.Contains(formats, dataset.Format(*format)):
		return usageErrorf("eval intent: unknown format %q; the formats are %s", *format, strings.Join(formatNames(), ", "))
	}
	train, test, source, err := evalData(*trainPath, *testPath, dataset.Format(*format))
	if errors.Is(err, dataset.ErrFormat) {
		return fmt.Errorf("%w\nthe formats are %s; --format names one when detection guesses wrong", err, strings.Join(formatNames(), ", "))
	} else if err != nil {
		return err
	}
	cfg := intent.Config{Intents: intent.IntentsFrom(train)}
	stages, err := evalStages(cfg, *withModel, *remoteURL)
	if err != nil {
		return err
	}
	var cal *intent.Calibration
	start := time.Now()
	if *calibrate {
		c, got, err := intent.Calibrate(ctx, cfg, intent.CalibrateOptions{}, stages...)
		if err != nil {
			return err
		}
		cfg, cal = c, &got
	}
	calibrated := time.Since(start)
	start = time.Now()
	e, err := intent.New(ctx, cfg, stages...)
	if err != nil {
		return err
	}
	trained := time.Since(start)
	rep, err := intent.Evaluate(ctx, e, test)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(evalJSON{
			InScopeAccuracy: rep.InScopeAccuracy, MacroF1: rep.MacroF1, OOSRecall: rep.OOSRecall,
			P50ms: ms(rep.P50), P99ms: ms(rep.P99), NTest: rep.N,
			NTrain: len(train), TrainSeconds: trained.Seconds(), CalibrateSeconds: calibrated.Seconds(),
			Decisions: rep.Decisions, Calibration: cal,
		})
	}
	fmt.Fprintf(out, "train              %d examples, %d intents, %s: %.2fs\n", len(train), len(cfg.Intents), *trainPath, trained.Seconds())
	if cal != nil {
		f := cal.Fusion
		fmt.Fprintf(out, "calibration        %.2fs on %d held out (%d out of scope): execute %.2f, route_to_cloud %.2f, classifier %.2f\n",
			calibrated.Seconds(), cal.HeldOut, cal.HeldOutOOS, f.ExecuteThreshold, f.RouteToCloudThreshold, f.ClassifierExecuteScore)
	}
	fmt.Fprintf(out, "test               %d examples (%d out of scope), %s\n", rep.N, rep.OutOfScope, source)
	fmt.Fprintf(out, "in-scope accuracy  %.2f%%\n", 100*rep.InScopeAccuracy)
	fmt.Fprintf(out, "macro-F1           %.2f%%\n", 100*rep.MacroF1)
	if rep.OOSRecall != nil {
		fmt.Fprintf(out, "oos recall         %.2f%%\n", 100**rep.OOSRecall)
	} else {
		fmt.Fprintf(out, "oos recall         n/a (no out-of-scope examples)\n")
	}
	fmt.Fprintf(out, "route p50 / p99    %.3f ms / %.3f ms\n", ms(rep.P50), ms(rep.P99))
	fmt.Fprintf(out, "decisions         ")
	decisions := make([]string, 0, len(rep.Decisions))
	for d := range rep.Decisions {
		decisions = append(decisions, string(d))
	}
	sort.Strings(decisions)
	for _, d := range decisions {
		fmt.Fprintf(out, " %s %d", d, rep.Decisions[intent.Decision(d)])
	}
	fmt.Fprintln(out)
	return nil
}

type evalJSON struct {
	InScopeAccuracy  float64                 `json:"in_scope_accuracy"`
	MacroF1          float64                 `json:"macro_f1"`
	OOSRecall        *float64                `json:"oos_recall"`
	P50ms            float64                 `json:"p50_ms"`
	P99ms            float64                 `json:"p99_ms"`
	NTest            int                     `json:"n_test"`
	NTrain           int                     `json:"n_train"`
	TrainSeconds     float64                 `json:"train_seconds"`
	CalibrateSeconds float64                 `json:"calibrate_seconds"`
	Decisions        map[intent.Decision]int `json:"decisions"`
	Calibration      *intent.Calibration     `json:"calibration,omitempty"`
}

// evalStages are the optional stages the flags ask for, over cfg's intents.
func evalStages(cfg intent.Config, withModel bool, remoteURL string) ([]intent.Option, error) {
	var opts []intent.Option
	if remoteURL != "" {
		rc := &intent.RemoteClassifier{URL: remoteURL}
		if err := rc.Check(); err != nil {
			return nil, err
		}
		for _, in := range cfg.Intents {
			rc.Labels = append(rc.Labels, in.ID)
		}
		opts = append(opts, intent.WithRemote(rc))
	}
	if withModel {
		m, err := openai.NewFromEnv()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, errors.New("--model: no model configured; set LOOM_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a local endpoint)")
		}
		mm, err := intent.NewModelMatcher(m, cfg, intent.ModelOptions{})
		if err != nil {
			return nil, err
		}
		opts = append(opts, intent.WithModel(mm))
	}
	return opts, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// splitSeed fixes the 80/20 split of a data set given without a test part.
const splitSeed = 1

// evalData picks the training and test examples (see evalUsage) and says
// where the test examples came from.
func evalData(trainPath, testPath string, f dataset.Format) (train, test []intent.Example, source string, err error) {
	tr, err := dataset.Load(trainPath, f)
	if err != nil {
		return nil, nil, "", err
	}
	train = tr.Train
	if testPath != "" {
		te, err := dataset.Load(testPath, f)
		if err != nil {
			return nil, nil, "", err
		}
		switch {
		case len(te.Test) > 0:
			return train, te.Test, testPath + " (test)", nil
		case len(te.Val) > 0:
			return train, te.Val, testPath + " (val)", nil
		}
		return train, te.Train, testPath, nil
	}
	if len(tr.Val) > 0 {
		return train, tr.Val, trainPath + " (val)", nil
	}
	train, test = intent.HoldOut(train, 0.2, splitSeed)
	return train, test, fmt.Sprintf("%s (seeded 80/20 split, seed %d)", trainPath, splitSeed), nil
}

// evalConversationAbout says what `loom eval conversation` measures.
const evalConversationAbout = `loom eval conversation [--cases FILE] [--json] plays labelled
multi-turn conversations against the cabin assistant, without a server or a model,
and prints the share of conversations that did what they must, per group
(zh, en, mixed, multi, slot, service), every failed conversation turn by
turn, and every action whose opposite was asked for. Without --cases it
plays the cabin's own set (apps/cabin/testdata/understanding.yml, which
says how to write a case). It exits 1 when a conversation failed or an
opposite action ran.`

// runEvalConversation is `loom eval conversation`.
func runEvalConversation(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("eval conversation", flag.ContinueOnError)
	casesPath := fs.String("cases", "", "a YAML `FILE` of labelled conversations by group (default: the cabin's own set)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags("eval conversation", fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("eval conversation: unexpected argument %q %s", fs.Arg(0), usage)
	}
	set := cabin.DefaultConversations()
	source := "the cabin's own set"
	if *casesPath != "" {
		b, err := os.ReadFile(*casesPath)
		if err != nil {
			return fmt.Errorf("eval conversation: %w", err)
		}
		if set, err = cabin.ParseConversations(b); err != nil {
			return fmt.Errorf("eval conversation: %s: %w", *casesPath, err)
		}
		source = *casesPath
	}
	app, err := cabin.New(ctx, cabin.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("eval conversation: %w", err)
	}
	start := time.Now()
	rep, err := app.PlayConversations(ctx, set)
	if err != nil {
		return fmt.Errorf("eval conversation: %w", err)
	}
	took := time.Since(start)
	failed := len(rep.Failures) > 0 || len(rep.Opposites) > 0
	if *asJSON {
		acc := map[string]float64{"all": rep.Accuracy("")}
		for _, g := range cabin.ConversationGroups {
			if rep.Total[g] > 0 {
				acc[g] = rep.Accuracy(g)
			}
		}
		if err := json.NewEncoder(out).Encode(map[string]any{"accuracy": acc, "passed": rep.Passed, "total": rep.Total, "failures": rep.Failures, "opposites": rep.Opposites, "seconds": took.Seconds()}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "conversations  %d, %s: %.2fs\n", set.Len(), source, took.Seconds())
		all, total := 0, 0
		for _, g := range cabin.ConversationGroups {
			if rep.Total[g] == 0 {
				continue
			}
			all, total = all+rep.Passed[g], total+rep.Total[g]
			fmt.Fprintf(out, "%-8s %4d/%-4d %6.1f%%\n", g, rep.Passed[g], rep.Total[g], 100*rep.Accuracy(g))
		}
		fmt.Fprintf(out, "%-8s %4d/%-4d %6.1f%%\n", "all", all, total, 100*rep.Accuracy(""))
		fmt.Fprintf(out, "opposite actions %d\n", len(rep.Opposites))
		for _, o := range rep.Opposites {
			fmt.Fprintln(out, "opposite: "+o)
		}
		for _, f := range rep.Failures {
			fmt.Fprintln(out, "failed: "+f)
		}
	}
	if failed {
		return errConversationsFailed
	}
	return nil
}

// errConversationsFailed makes loom exit 1 when a conversation failed;
// the report says which.
var errConversationsFailed = errors.New("eval conversation: some conversations failed")
