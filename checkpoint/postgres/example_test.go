package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/postgres"
)

// Open needs a running PostgreSQL server, so this example is compiled but
// not run by go test.
func ExampleOpen() {
	ctx := context.Background()
	// search_path picks the schema for Loom's tables; leave it out for public.
	s, err := postgres.Open(ctx, "postgres://loom@127.0.0.1:5432/app?sslmode=disable&search_path=loom")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer s.Close()

	// Two steps of a thread, each following the head.
	first := checkpoint.Next("thread-1", nil, checkpoint.SourceInput)
	first.State = []byte(`{"messages":["hi"]}`)
	if err := s.Put(ctx, first); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	second := checkpoint.Next("thread-1", first, checkpoint.SourceStep)
	second.State = []byte(`{"messages":["hi","hello!"]}`)
	if err := s.Put(ctx, second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}

	// A writer still holding the first checkpoint as head loses.
	late := checkpoint.Next("thread-1", first, checkpoint.SourceStep)
	fmt.Println("stale put conflicts:", errors.Is(s.Put(ctx, late), checkpoint.ErrConflict))

	head, err := s.Get(ctx, "thread-1", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(head.Seq, string(head.State))
}

// Migrate applies the schema ahead of time, as a deploy step would.
func ExampleMigrate() {
	if err := postgres.Migrate(context.Background(), os.Getenv("DATABASE_URL")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println("schema at version", postgres.SchemaVersion)
}
