package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// migrate runs `loom migrate`: it applies the migrations that the
// database of LOOM_DATABASE_URL (or --db) lacks — checkpoints, the
// server's tables, the agents' own and, on Postgres, the job queue's —
// and prints the version of each. `loom serve` does the same when it
// starts; migrate is for doing it ahead of time, as a deploy step.
func migrate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(out)
	dbURL := fs.String("db", os.Getenv("LOOM_DATABASE_URL"), "database URL: a SQLite file (default ./loom.db) or postgres://… (default $LOOM_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("migrate: unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	db, err := store.Open(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer db.Close()
	v, err := server.Migrate(ctx, db, agents())
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names := make([]string, 0, len(v))
	for c := range v {
		names = append(names, c)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = fmt.Sprintf("%s %d", c, v[c])
	}
	fmt.Fprintf(out, "%s is up to date: %s\n", db, strings.Join(parts, ", "))
	return nil
}
