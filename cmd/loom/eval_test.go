package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm/llmtest"
)

// writeEvalData writes a small CLINC150-style file and the same examples
// as CSV, and returns their paths.
func writeEvalData(t *testing.T) (clinc, csv string) {
	t.Helper()
	intents := map[string][]string{
		"weather":   {"what is the weather", "will it rain today", "is it sunny outside", "weather forecast please", "how hot is it today", "do i need an umbrella", "is it cold outside", "weather for tomorrow", "what's the forecast", "will it snow"},
		"timer":     {"set a timer", "start a timer for ten minutes", "timer for five minutes", "count down three minutes", "set a countdown", "remind me in ten minutes", "start a countdown", "set timer please", "a timer for one hour", "timer for the eggs"},
		"play_song": {"play a song", "play some music", "put on some jazz", "play my playlist", "i want to hear music", "start the music", "play the next song", "play some rock", "music please", "play a tune"},
	}
	oos := []string{"how do volcanoes form", "who wrote hamlet", "what is the capital of peru", "how tall is everest", "explain gravity", "who painted the mona lisa"}
	data := map[string][][2]string{}
	var rows strings.Builder
	rows.WriteString("text,category\n")
	for id, texts := range intents {
		for i, text := range texts {
			split := "train"
			if i%5 == 4 {
				split = "val"
			}
			data[split] = append(data[split], [2]string{text, id})
			fmt.Fprintf(&rows, "%s,%s\n", text, id)
		}
	}
	for i, text := range oos {
		split := "oos_train"
		if i%2 == 1 {
			split = "oos_val"
		}
		data[split] = append(data[split], [2]string{text, "oos"})
	}
	dir := t.TempDir()
	clinc, csv = filepath.Join(dir, "data_full.json"), filepath.Join(dir, "rows.csv")
	b, _ := json.Marshal(data)
	if err := os.WriteFile(clinc, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csv, []byte(rows.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return clinc, csv
}

func TestEvalIntentJSON(t *testing.T) {
	clinc, csv := writeEvalData(t)
	for _, c := range []struct {
		name  string
		args  []string
		nTest int
		oos   bool
	}{
		{"clinc150 val", []string{"--train", clinc}, 9, true}, // 6 val + 3 oos_val
		{"clinc150 as test file", []string{"--train", clinc, "--test", clinc, "--format", "clinc150"}, 9, true},
		{"csv split", []string{"--train", csv, "--calibrate=false"}, 6, false}, // 20% of 10 per intent
		{"csv test file", []string{"--train", csv, "--test", csv, "--format", "csv"}, 30, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), append([]string{"eval", "intent", "--json"}, c.args...), &out); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			for _, k := range []string{"in_scope_accuracy", "macro_f1", "oos_recall", "p50_ms", "p99_ms", "n_test"} {
				if _, ok := got[k]; !ok {
					t.Errorf("no key %s in %s", k, out.String())
				}
			}
			if got["n_test"] != float64(c.nTest) || (got["oos_recall"] != nil) != c.oos {
				t.Errorf("n_test %v, oos_recall %v; want %d, oos %v", got["n_test"], got["oos_recall"], c.nTest, c.oos)
			}
			if acc, _ := got["in_scope_accuracy"].(float64); acc < 0.5 {
				t.Errorf("in-scope accuracy %v on easy data", acc)
			}
		})
	}
}

func TestEvalIntentText(t *testing.T) {
	clinc, _ := writeEvalData(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"eval", "intent", "--train", clinc}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"in-scope accuracy", "macro-F1", "oos recall", "route p50 / p99", "calibration"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEvalRejectsBadArguments(t *testing.T) {
	_, csv := writeEvalData(t)
	for _, args := range [][]string{
		{"eval"},
		{"eval", "sql"},
		{"eval", "intent"},
		{"eval", "intent", "--train", filepath.Join(t.TempDir(), "missing.json")},
		{"eval", "intent", "--train", csv, "--format", "xml"},
		{"eval", "intent", "--train", csv, "--bogus"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestEvalIntentStages runs the evaluation with the model stage on a
// scripted OpenAI-compatible endpoint and with a remote classifier, both
// answering the truth, on paraphrases the local stages have not seen: the
// model is asked for the examples the local stages do not execute, and
// being right it lifts the accuracy.
func TestEvalIntentStages(t *testing.T) {
	train, _ := writeEvalData(t) // with out-of-scope examples
	truth := map[string]string{  // two the local stages execute, four they do not
		"brolly needed":     "weather",
		"buzz me in 8":      "timer",
		"egg boiling alarm": "timer",
		"chrono":            "timer",
		"drizzle":           "weather",
		"jukebox":           "play_song",
	}
	var rows strings.Builder
	rows.WriteString("text,category\n")
	for text, id := range truth {
		fmt.Fprintf(&rows, "%s,%s\n", text, id)
	}
	test := filepath.Join(t.TempDir(), "test.csv")
	if err := os.WriteFile(test, []byte(rows.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	accuracy := func(t *testing.T, extra ...string) float64 {
		t.Helper()
		var out bytes.Buffer
		args := append([]string{"eval", "intent", "--json", "--calibrate=false", "--train", train, "--test", test}, extra...)
		if err := run(context.Background(), args, &out); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Accuracy float64 `json:"in_scope_accuracy"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		return got.Accuracy
	}
	local := accuracy(t)
	if local == 1 {
		t.Fatal("the local stages get every paraphrase right; the test needs harder ones")
	}

	t.Run("model", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Handle(func(r llmtest.Request) llmtest.Reply {
			msgs := r.Messages()
			return llmtest.Text(fmt.Sprintf(`{"intent":%q,"confidence":0.9}`, truth[msgs[len(msgs)-1].Content]))
		})
		t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
		t.Setenv("OPENAI_API_KEY", "test")
		t.Setenv("LOOM_MODEL", "test")
		if got := accuracy(t, "--model"); got != 1 || len(srv.Requests()) == 0 {
			t.Errorf("accuracy %.2f with the model (%.2f without), %d model requests", got, local, len(srv.Requests()))
		}
	})

	t.Run("remote", func(t *testing.T) {
		svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Text string `json:"text"`
			}
			json.NewDecoder(r.Body).Decode(&req)
			fmt.Fprintf(w, `{"candidates":[{"intent":%q,"score":0.99}]}`, truth[req.Text])
		}))
		defer svc.Close()
		if got := accuracy(t, "--remote", svc.URL); got <= local {
			t.Errorf("accuracy %.2f with the remote classifier, %.2f without", got, local)
		}
	})

	t.Run("no model configured", func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", "")
		t.Setenv("OPENAI_API_KEY", "")
		t.Setenv("LOOM_MODEL", "")
		err := run(context.Background(), []string{"eval", "intent", "--train", train, "--model"}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "no model configured") {
			t.Errorf("err %v", err)
		}
		err = run(context.Background(), []string{"eval", "intent", "--train", train, "--remote", "localhost:1"}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
			t.Errorf("err %v", err)
		}
	})
}

// TestEvalConversation plays the cabin's own labelled conversations and a
// file of one's own: accuracy per group, every failure, and an error when
// a conversation failed.
func TestEvalConversation(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"eval", "conversation"}, &out); err != nil {
		t.Fatalf("the cabin's own set: %v\n%s", err, out.String())
	}
	for _, want := range []string{"zh ", "en ", "mixed ", "multi ", "slot ", "service ", "all ", "100.0%", "opposite actions 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	cases := filepath.Join(t.TempDir(), "cases.yml")
	if err := os.WriteFile(cases, []byte("en:\n  - [\"open the windows => cabin_window_open\"]\n  - [\"open the windows => cabin_window_close\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := run(context.Background(), []string{"eval", "conversation", "--cases", cases, "--json"}, &out)
	if err == nil {
		t.Error("a failed conversation is no error")
	}
	var rep struct {
		Accuracy map[string]float64 `json:"accuracy"`
		Failures []string           `json:"failures"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Accuracy["en"] != 0.5 || len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "open the windows") {
		t.Errorf("report %+v, want en at 50%% and the failure", rep)
	}

	for _, args := range [][]string{
		{"eval", "conversation", "--cases", filepath.Join(t.TempDir(), "missing.yml")},
		{"eval", "conversation", "extra"},
	} {
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
