package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "loom-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := sqlite.Open(ctx, filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Two steps of a thread, each following the head.
	first := checkpoint.Next("thread-1", nil, checkpoint.SourceInput)
	first.State = []byte(`{"messages":["hi"]}`)
	if err := s.Put(ctx, first); err != nil {
		fmt.Println(err)
		return
	}
	second := checkpoint.Next("thread-1", first, checkpoint.SourceStep)
	second.State = []byte(`{"messages":["hi","hello!"]}`)
	if err := s.Put(ctx, second); err != nil {
		fmt.Println(err)
		return
	}

	// A writer still holding the first checkpoint as head loses.
	late := checkpoint.Next("thread-1", first, checkpoint.SourceStep)
	fmt.Println("stale put conflicts:", errors.Is(s.Put(ctx, late), checkpoint.ErrConflict))

	head, err := s.Get(ctx, "thread-1", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(head.Seq, string(head.State))
	// Output:
	// stale put conflicts: true
	// 1 {"messages":["hi","hello!"]}
}
