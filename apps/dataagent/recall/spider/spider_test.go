package spider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/recall/spider"
	"github.com/loomkit/loom/internal/testenv"
)

func sample(t testing.TB) *spider.Set {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "..", "shared", "data", "spider_sample")
	if _, err := os.Stat(dir); err != nil {
		abs, _ := filepath.Abs(dir)
		testenv.Need(t, fmt.Sprintf("data folder %s not found", abs), err)
	}
	set, err := spider.Load(filepath.Join(dir, "tables.json"), filepath.Join(dir, "questions.json"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestSampleRecall measures schema recall at k = 5 on the Spider sample
// without a model and holds it to the figures it reached: every table of
// both databases the questions use (7) as one pool; each question's own
// database; and all 148 databases (802 tables) as one pool.
func TestSampleRecall(t *testing.T) {
	set := sample(t)
	if len(set.Questions) != 87 {
		t.Fatalf("%d questions, want 87", len(set.Questions))
	}
	for _, c := range []struct {
		pool    string
		tables  int
		allGold float64 // floors: what recall reaches, not a target
		recall  float64
	}{
		{spider.PoolQuestions, 7, 0.96, 0.97},
		{spider.PoolDB, 4, 0.96, 0.97},
		{spider.PoolAll, 802, 0.94, 0.95},
	} {
		rep, err := set.Evaluate(t.Context(), c.pool, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pool %s (%d tables): all_gold_at_5 %.3f table_recall_at_5 %.3f mrr %.3f", c.pool, rep.Tables, rep.AllGoldAtK, rep.TableRecallAtK, rep.MRR)
		for _, m := range rep.Misses {
			t.Logf("  missed %q: gold %v, got %v", m.Question, m.Gold, m.Got)
		}
		if rep.N != 87 || rep.Tables != c.tables {
			t.Errorf("pool %s: %d questions over %d tables, want 87 over %d", c.pool, rep.N, rep.Tables, c.tables)
		}
		if rep.AllGoldAtK < c.allGold || rep.TableRecallAtK < c.recall {
			t.Errorf("pool %s: all_gold_at_5 %.3f, table_recall_at_5 %.3f; want at least %.2f and %.2f", c.pool, rep.AllGoldAtK, rep.TableRecallAtK, c.allGold, c.recall)
		}
		if rep.MRR <= 0 || rep.MRR > 1 {
			t.Errorf("pool %s: mrr %.3f", c.pool, rep.MRR)
		}
	}
}

// TestGoldTablesIncludeNestedQueries checks the gold tables of a question
// whose SQL reads a table only in a nested query (NOT IN (SELECT ...)).
func TestGoldTablesIncludeNestedQueries(t *testing.T) {
	set := sample(t)
	for _, q := range set.Questions {
		if q.Question == "Find the average age of students who do not have any pet ." {
			if len(q.Gold) != 2 || q.Gold[0] != "Student" || q.Gold[1] != "Has_Pet" {
				t.Errorf("gold %v, want [Student Has_Pet]", q.Gold)
			}
			return
		}
	}
	t.Fatal("question not in the sample")
}

func TestLoadRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tables := write("tables.json", `[{"db_id":"d","table_names_original":["t"],"column_names_original":[[-1,"*"],[0,"a"]],"column_types":["text","text"],"primary_keys":[1],"foreign_keys":[]}]`)
	for _, c := range []struct{ name, tables, questions string }{
		{"not json", write("bad.json", `{`), write("q0.json", `[]`)},
		{"unknown db", tables, write("q1.json", `[{"db_id":"x","question":"q","sql":{"from":{"table_units":[["table_unit",0]]}}}]`)},
		{"table out of range", tables, write("q2.json", `[{"db_id":"d","question":"q","sql":{"from":{"table_units":[["table_unit",3]]}}}]`)},
		{"no questions", tables, write("q3.json", `[]`)},
		{"no such file", tables, filepath.Join(dir, "missing.json")},
	} {
		if _, err := spider.Load(c.tables, c.questions); err == nil {
			t.Errorf("%s: loaded", c.name)
		}
	}
	set, err := spider.Load(tables, write("q4.json", `[{"db_id":"d","question":"rows of t","sql":{"from":{"table_units":[["table_unit",0]]}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Evaluate(t.Context(), "nowhere", 5); err == nil {
		t.Error("unknown pool accepted")
	}
	if rep, err := set.Evaluate(t.Context(), spider.PoolDB, 1); err != nil || rep.AllGoldAtK != 1 {
		t.Errorf("one table, one question: %+v, %v", rep, err)
	}
}
