package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/apps/dataagent/recall/spider"
)

// evalSchemaAbout says what `loom eval schema-recall` measures, in its help.
const evalSchemaAbout = `loom eval schema-recall --tables FILE --questions FILE [flags] measures the data analyst's schema recall, with no model, on a benchmark in
the Spider format: tables.json (the databases' schemas) and a questions file
(dev.json), whose parsed SQL gives each question's gold tables, nested
queries included; or on defog sql-eval's: --tables its databases folder
(<db>.json column descriptions, <db>.sql for the keys) and --questions one
of its CSV files, whose first gold statement gives the tables read. Each
question alone is the query; the recalled tables are
the top k, with the tables that join them brought in as the agent gets them.

all_gold_at_k is the share of questions whose gold tables are all recalled,
table_recall_at_k the mean share of gold tables recalled, mrr the mean
reciprocal rank of the first gold table; p50_ms and p99_ms time one recall.`

// evalSchemaArgs are the flags of `loom eval schema-recall`.
type evalSchemaArgs struct {
	tablesPath, questionsPath, pool *string
	k                               *int
	asJSON, misses                  *bool
}

func evalSchemaFlags() (*flag.FlagSet, evalSchemaArgs) {
	fs := flag.NewFlagSet("eval schema-recall", flag.ContinueOnError)
	return fs, evalSchemaArgs{
		tablesPath:    fs.String("tables", "", "the schemas, Spider's tables.json `FILE` (or defog's databases folder)"),
		questionsPath: fs.String("questions", "", "the questions `FILE`, in Spider's dev.json format (or a defog CSV file)"),
		pool:          fs.String("pool", spider.PoolQuestions, "the tables indexed as one `POOL`: questions (every table of the databases the questions use), db (each question's own database) or all (every database)"),
		k:             fs.Int("k", 5, "how many recalled tables count"),
		asJSON:        fs.Bool("json", false, "end with one JSON object"),
		misses:        fs.Bool("misses", false, "list the questions whose gold tables were not all recalled"),
	}
}

// evalSchemaHelp is what schema-recall measures and its flags, indented
// apart from the flags of loom eval intent that follow in the help.
func evalSchemaHelp() string {
	fs, _ := evalSchemaFlags()
	var b strings.Builder
	b.WriteString(evalSchemaAbout + "\n\nschema-recall flags:")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "\n    --%s", strings.TrimSpace(f.Name+" "+arg))
		if f.DefValue != "" && f.DefValue != "false" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		b.WriteString("\n        " + usage)
	})
	return b.String()
}

// runEvalSchema is `loom eval schema-recall`.
func runEvalSchema(ctx context.Context, args []string, out io.Writer) error {
	fs, a := evalSchemaFlags()
	if err := parseFlags("eval schema-recall", fs, args, out); err != nil {
		return err
	}
	tablesPath, questionsPath, pool, k, asJSON, misses := a.tablesPath, a.questionsPath, a.pool, a.k, a.asJSON, a.misses
	switch {
	case *tablesPath == "" || *questionsPath == "":
		return usageErrorf("eval schema-recall: --tables FILE and --questions FILE are required %s", usage)
	case fs.NArg() > 0:
		return usageErrorf("eval schema-recall: unexpected argument %q %s", fs.Arg(0), usage)
	case *k < 1:
		return usageErrorf("eval schema-recall: --k must be at least 1, not %d", *k)
	case *pool != spider.PoolQuestions && *pool != spider.PoolDB && *pool != spider.PoolAll:
		return usageErrorf("eval schema-recall: unknown pool %q; the pools are questions, db and all", *pool)
	}
	load := spider.Load
	if strings.EqualFold(filepath.Ext(*questionsPath), ".csv") {
		load = spider.LoadDefog
	}
	set, err := load(*tablesPath, *questionsPath)
	if err != nil {
		return err
	}
	rep, err := set.Evaluate(ctx, *pool, *k)
	if err != nil {
		return err
	}
	if *misses {
		for _, m := range rep.Misses {
			fmt.Fprintf(out, "missed  %s\n        gold %s; recalled %s\n", m.Question, strings.Join(m.Gold, ", "), strings.Join(m.Got, ", "))
		}
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(rep)
	}
	fmt.Fprintf(out, "pool               %s: %d tables\n", rep.Pool, rep.Tables)
	fmt.Fprintf(out, "questions          %d\n", rep.N)
	fmt.Fprintf(out, "all gold at %-2d     %.2f%%\n", rep.K, 100*rep.AllGoldAtK)
	fmt.Fprintf(out, "table recall at %-2d %.2f%%\n", rep.K, 100*rep.TableRecallAtK)
	fmt.Fprintf(out, "mrr                %.3f\n", rep.MRR)
	fmt.Fprintf(out, "recall p50 / p99   %.3f ms / %.3f ms\n", rep.P50Ms, rep.P99Ms)
	return nil
}
