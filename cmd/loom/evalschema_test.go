package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/internal/testenv"
)

// spiderSample is the Spider sample beside the repository; the test is
// skipped without it, or fails under CI=true.
func spiderSample(t *testing.T) (tables, questions string) {
	t.Helper()
	dir, _ := filepath.Abs("../../../shared/data/spider_sample")
	if _, err := os.Stat(filepath.Join(dir, "tables.json")); err != nil {
		testenv.Need(t, "the Spider sample is not beside the repository", err)
	}
	return filepath.Join(dir, "tables.json"), filepath.Join(dir, "questions.json")
}

// TestEvalSchemaRecall runs loom eval schema-recall on the Spider sample
// and holds the figures it prints to what recall reaches there at k = 5:
// 0.966 of the questions have all their gold tables recalled from the 7
// tables of their two databases, 0.943 from all 802 tables.
func TestEvalSchemaRecall(t *testing.T) {
	tables, questions := spiderSample(t)
	for _, c := range []struct {
		pool    string
		tables  int
		allGold float64
	}{
		{"", 7, 0.96}, // the default pool: the questions' databases
		{"all", 802, 0.94},
	} {
		args := []string{"eval", "schema-recall", "--tables", tables, "--questions", questions, "--json"}
		if c.pool != "" {
			args = append(args, "--pool", c.pool)
		}
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var rep struct {
			AllGold *float64 `json:"all_gold_at_k"`
			Recall  *float64 `json:"table_recall_at_k"`
			MRR     *float64 `json:"mrr"`
			N       int      `json:"n"`
			P50     *float64 `json:"p50_ms"`
			P99     *float64 `json:"p99_ms"`
			Tables  int      `json:"tables"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
			t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
		}
		if rep.AllGold == nil || rep.Recall == nil || rep.MRR == nil || rep.P50 == nil || rep.P99 == nil {
			t.Fatalf("fields missing: %s", lines[len(lines)-1])
		}
		t.Logf("pool %q: %s", c.pool, lines[len(lines)-1])
		if rep.N != 87 || rep.Tables != c.tables {
			t.Errorf("pool %q: %d questions over %d tables, want 87 over %d", c.pool, rep.N, rep.Tables, c.tables)
		}
		if *rep.AllGold < c.allGold || *rep.Recall < *rep.AllGold || *rep.MRR <= 0 || *rep.P99 < *rep.P50 {
			t.Errorf("pool %q: %s; want all_gold_at_k ≥ %.2f", c.pool, lines[len(lines)-1], c.allGold)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"eval", "schema-recall", "--tables", tables, "--questions", questions, "--k", "1", "--misses"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"missed  ", "all gold at 1 ", "pool               questions: 7 tables"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEvalSchemaRejectsBadArguments(t *testing.T) {
	tables, questions := spiderSample(t)
	for _, args := range [][]string{
		{"eval", "schema-recall"},
		{"eval", "schema-recall", "--tables", tables},
		{"eval", "schema-recall", "--tables", tables, "--questions", questions, "--pool", "everything"},
		{"eval", "schema-recall", "--tables", tables, "--questions", questions, "--k", "0"},
		{"eval", "schema-recall", "--tables", questions, "--questions", questions},
		{"eval", "schema-recall", "--tables", tables, "--questions", filepath.Join(t.TempDir(), "missing.json")},
		{"eval", "schema-recall", "--tables", tables, "--questions", questions, "extra"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
