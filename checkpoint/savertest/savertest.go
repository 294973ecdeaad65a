// Package savertest is a conformance suite for checkpoint.Saver
// implementations. Every backend runs Run unchanged from its own tests:
//
//	func TestSaver(t *testing.T) {
//		savertest.Run(t, func(t *testing.T) checkpoint.Saver { return newSaver(t) })
//	}
//
// Backends whose storage outlives a saver (a file, a database) also run
// RunStorage.
//
// What the suite holds a backend to: State comes back byte for byte;
// Interrupt payloads and Resumes come back as the same JSON values (a
// backend may re-encode them); nil and empty Next, Resumes and Counters are
// the same; Meta.Created keeps its instant to the nanosecond.
package savertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
)

// Run runs the conformance suite against savers made by newSaver. Each
// subtest calls newSaver once and expects an empty saver of its own; the
// factory should register any cleanup with t.Cleanup.
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s checkpoint.Saver)
	}{
		{"RoundTrip", testRoundTrip},
		{"Isolation", testIsolation},
		{"NotFound", testNotFound},
		{"CompareAndSet", testCompareAndSet},
		{"ConcurrentChildren", testConcurrentChildren},
		{"ConcurrentChain", testConcurrentChain},
		{"List", testList},
		{"Undo", testUndo},
		{"ForkSameThread", testForkSameThread},
		{"ForkNewThread", testForkNewThread},
		{"DeleteThread", testDeleteThread},
		{"ThreadsIsolated", testThreadsIsolated},
		{"LargeState", testLargeState},
		{"LongHistory", testLongHistory},
		{"TrimHistory", testTrimHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newSaver(t))
		})
	}
}

// base is the creation time of the suite's checkpoints: not UTC and with
// nanoseconds, so that a backend that loses either fails.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600+1800))

// sample returns a checkpoint following head on thread with every field set,
// varied by i.
func sample(thread string, head *checkpoint.Checkpoint, i int, state string) *checkpoint.Checkpoint {
	cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
	cp.Step = i
	cp.State = json.RawMessage(state)
	cp.Next = []string{fmt.Sprintf("node-%d", i), "tools"}
	cp.Interrupt = &checkpoint.Interrupt{
		ID:      fmt.Sprintf("ask-%d", i),
		Node:    fmt.Sprintf("node-%d", i),
		Payload: json.RawMessage(fmt.Sprintf(`{"question": "go on? <%d>", "options": ["yes", "no"], "n": %d}`, i, i)),
	}
	if i%2 == 1 {
		// Several questions at once: fan-out branches each asked, one
		// with a deadline and a default answer.
		cp.SetPending([]checkpoint.Interrupt{*cp.Interrupt, {
			ID:       fmt.Sprintf("ask-%d-b", i),
			Node:     fmt.Sprintf("node-%d", i),
			Branch:   fmt.Sprintf("node-%d[1]", i),
			Payload:  json.RawMessage(`{"question": "and this?"}`),
			Schema:   json.RawMessage(`{"type": "boolean"}`),
			Deadline: base.Add(time.Duration(i) * time.Hour),
			Default:  json.RawMessage(`false`),
		}})
		cp.Answers = map[string][]json.RawMessage{fmt.Sprintf("node-%d[0]", i): {json.RawMessage(`true`), json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}}
		// A branch that finished before its node; the checkpoint of a
		// subgraph's thread.
		cp.Done = map[string]json.RawMessage{fmt.Sprintf("node-%d[2]", i): json.RawMessage(fmt.Sprintf(`{"result": %d}`, i))}
		cp.Nest = &checkpoint.Nest{Step: fmt.Sprintf("outer/%d/sub", i), Used: i}
	}
	cp.Resumes = []json.RawMessage{json.RawMessage(`"yes"`), json.RawMessage(fmt.Sprintf(`{"answer": %d}`, i))}
	cp.Counters = map[string]int{"loop": i, "retry->plan": i * 2}
	cp.Meta.Node = fmt.Sprintf("node-%d", i)
	cp.Meta.Run = fmt.Sprintf("run-%d", i/3)
	cp.Meta.Duration = time.Duration(i)*time.Millisecond + 123*time.Nanosecond
	cp.Meta.From = ""
	cp.Meta.Created = base.Add(time.Duration(i) * time.Second)
	return cp
}

// bare returns a checkpoint following head with only state set.
func bare(thread string, head *checkpoint.Checkpoint, state string) *checkpoint.Checkpoint {
	cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
	cp.State = json.RawMessage(state)
	return cp
}

func put(t *testing.T, s checkpoint.Saver, cp *checkpoint.Checkpoint) {
	t.Helper()
	if err := s.Put(t.Context(), cp); err != nil {
		t.Fatalf("put %s/%s seq %d: %v", cp.Thread, cp.ID, cp.Seq, err)
	}
}

func get(t *testing.T, s checkpoint.Saver, thread, id string) *checkpoint.Checkpoint {
	t.Helper()
	cp, err := s.Get(t.Context(), thread, id)
	if err != nil {
		t.Fatalf("get %s/%q: %v", thread, id, err)
	}
	if cp == nil {
		t.Fatalf("get %s/%q: nil checkpoint and nil error", thread, id)
	}
	return cp
}

func list(t *testing.T, s checkpoint.Saver, thread string, limit int) []*checkpoint.Checkpoint {
	t.Helper()
	cps, err := s.List(t.Context(), thread, limit)
	if err != nil {
		t.Fatalf("list %s limit %d: %v", thread, limit, err)
	}
	for i, cp := range cps {
		if cp == nil {
			t.Fatalf("list %s limit %d: entry %d is nil", thread, limit, i)
		}
	}
	return cps
}

// chain puts one bare checkpoint per state on thread, after head (nil for
// a new thread), and returns them oldest first.
func chain(t *testing.T, s checkpoint.Saver, thread string, head *checkpoint.Checkpoint, states ...string) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	for _, st := range states {
		cp := bare(thread, head, st)
		put(t, s, cp)
		out = append(out, cp)
		head = cp
	}
	return out
}

func wantNotFound(t *testing.T, s checkpoint.Saver, thread, id string) {
	t.Helper()
	cp, err := s.Get(t.Context(), thread, id)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("get %s/%q: got checkpoint %v, error %v; want ErrNotFound", thread, id, cp != nil, err)
	}
}

// same reports every field where got differs from want.
func same(t *testing.T, what string, want, got *checkpoint.Checkpoint) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: got nil checkpoint", what)
		return
	}
	if got.Thread != want.Thread || got.ID != want.ID || got.ParentID != want.ParentID {
		t.Errorf("%s: got thread/id/parent %q/%q/%q, want %q/%q/%q", what, got.Thread, got.ID, got.ParentID, want.Thread, want.ID, want.ParentID)
	}
	if got.Seq != want.Seq || got.Step != want.Step {
		t.Errorf("%s: got seq %d step %d, want seq %d step %d", what, got.Seq, got.Step, want.Seq, want.Step)
	}
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("%s: state differs: got %d bytes %.80q, want %d bytes %.80q", what, len(got.State), got.State, len(want.State), want.State)
	}
	if !slices.Equal(got.Next, want.Next) {
		t.Errorf("%s: got next %q, want %q", what, got.Next, want.Next)
	}
	switch {
	case (got.Interrupt == nil) != (want.Interrupt == nil):
		t.Errorf("%s: got interrupt %+v, want %+v", what, got.Interrupt, want.Interrupt)
	case got.Interrupt != nil:
		if got.Interrupt.ID != want.Interrupt.ID || got.Interrupt.Node != want.Interrupt.Node {
			t.Errorf("%s: got interrupt %q at %q, want %q at %q", what, got.Interrupt.ID, got.Interrupt.Node, want.Interrupt.ID, want.Interrupt.Node)
		}
		if !jsonEqual(got.Interrupt.Payload, want.Interrupt.Payload) {
			t.Errorf("%s: got interrupt payload %s, want %s", what, got.Interrupt.Payload, want.Interrupt.Payload)
		}
	}
	if gp, wp := got.Pending(), want.Pending(); len(gp) != len(wp) {
		t.Errorf("%s: got %d pending interrupts, want %d", what, len(gp), len(wp))
	} else {
		for i := range gp {
			g, w := gp[i], wp[i]
			if g.ID != w.ID || g.Node != w.Node || g.Branch != w.Branch || !g.Deadline.Equal(w.Deadline) || !jsonEqual(g.Payload, w.Payload) || !jsonEqual(g.Schema, w.Schema) || !jsonEqual(g.Default, w.Default) {
				t.Errorf("%s: pending interrupt %d: got %+v, want %+v", what, i, g, w)
			}
		}
	}
	if len(got.Answers) != len(want.Answers) {
		t.Errorf("%s: got answers of %d branches, want %d", what, len(got.Answers), len(want.Answers))
	}
	for b, wa := range want.Answers {
		ga := got.Answers[b]
		if len(ga) != len(wa) {
			t.Errorf("%s: branch %s: got %d answers, want %d", what, b, len(ga), len(wa))
			continue
		}
		for i := range wa {
			if !jsonEqual(ga[i], wa[i]) {
				t.Errorf("%s: branch %s answer %d: got %s, want %s", what, b, i, ga[i], wa[i])
			}
		}
	}
	if len(got.Done) != len(want.Done) {
		t.Errorf("%s: got results of %d finished branches, want %d", what, len(got.Done), len(want.Done))
	}
	for b, w := range want.Done {
		if g := got.Done[b]; !jsonEqual(g, w) {
			t.Errorf("%s: finished branch %s: got %s, want %s", what, b, g, w)
		}
	}
	if (got.Nest == nil) != (want.Nest == nil) || (got.Nest != nil && *got.Nest != *want.Nest) {
		t.Errorf("%s: got nest %+v, want %+v", what, got.Nest, want.Nest)
	}
	if len(got.Resumes) != len(want.Resumes) {
		t.Errorf("%s: got %d resumes, want %d", what, len(got.Resumes), len(want.Resumes))
	} else {
		for i := range got.Resumes {
			if !jsonEqual(got.Resumes[i], want.Resumes[i]) {
				t.Errorf("%s: resume %d: got %s, want %s", what, i, got.Resumes[i], want.Resumes[i])
			}
		}
	}
	if !maps.Equal(got.Counters, want.Counters) {
		t.Errorf("%s: got counters %v, want %v", what, got.Counters, want.Counters)
	}
	gm, wm := got.Meta, want.Meta
	if gm.Source != wm.Source || gm.Node != wm.Node || gm.Run != wm.Run || gm.From != wm.From {
		t.Errorf("%s: got meta source/node/run/from %q/%q/%q/%q, want %q/%q/%q/%q", what, gm.Source, gm.Node, gm.Run, gm.From, wm.Source, wm.Node, wm.Run, wm.From)
	}
	if gm.Duration != wm.Duration {
		t.Errorf("%s: got duration %v, want %v", what, gm.Duration, wm.Duration)
	}
	if !gm.Created.Equal(wm.Created) {
		t.Errorf("%s: got created %v, want %v", what, gm.Created, wm.Created)
	}
}

// jsonEqual reports whether a and b hold the same JSON value; two empty
// inputs are equal.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// wantHistory checks that List(thread, 0) is exactly want, newest first.
func wantHistory(t *testing.T, s checkpoint.Saver, thread string, want ...*checkpoint.Checkpoint) {
	t.Helper()
	got := list(t, s, thread, 0)
	if len(got) != len(want) {
		t.Fatalf("list %s: got %d checkpoints, want %d", thread, len(got), len(want))
	}
	for i := range want {
		same(t, fmt.Sprintf("list %s [%d]", thread, i), want[len(want)-1-i], got[i])
	}
}

func testRoundTrip(t *testing.T, s checkpoint.Saver) {
	// State with whitespace, escapes and characters a JSON encoder would
	// rewrite: it must come back as the same bytes.
	a := sample("rt", nil, 1, "{\"msgs\": [\"h\u00e9llo\", \"<b>&amp;\", \"\\u00e9\"],\n  \"n\": 1.50}\n")
	put(t, s, a)
	same(t, "head after first put", a, get(t, s, "rt", ""))
	same(t, "first by id", a, get(t, s, "rt", a.ID))

	// A child with the optional fields empty, and one with them set again.
	b := bare("rt", a, `{"msgs":[]}`)
	b.Meta.Source = checkpoint.SourceResume
	b.Meta.From = a.ID
	b.Meta.Created = base.Add(-time.Hour)
	put(t, s, b)
	c := sample("rt", b, 7, `[1,2,3]`)
	c.Meta.Source = checkpoint.SourceUpdate
	put(t, s, c)

	same(t, "head", c, get(t, s, "rt", ""))
	for _, want := range []*checkpoint.Checkpoint{a, b, c} {
		same(t, "by id seq "+fmt.Sprint(want.Seq), want, get(t, s, "rt", want.ID))
	}
	if got := get(t, s, "rt", b.ID); got.Interrupt != nil || len(got.Next) != 0 || len(got.Resumes) != 0 || len(got.Counters) != 0 {
		t.Errorf("checkpoint without optional fields came back with %+v", got)
	}
	wantHistory(t, s, "rt", a, b, c)
}

// testIsolation checks that neither the checkpoint given to Put nor one
// returned by Get shares Next, Counters, Resumes or Interrupt with what is
// stored.
func testIsolation(t *testing.T, s checkpoint.Saver) {
	a := sample("iso", nil, 1, `{"a":1}`)
	want := sample("iso", nil, 1, `{"a":1}`)
	want.ID = a.ID
	put(t, s, a)
	a.Next[0] = "changed"
	a.Counters["loop"] = 99
	a.Interrupt.Node = "changed"
	a.Resumes[0] = json.RawMessage(`"changed"`)
	a.Interrupts[1].Branch = "changed"
	a.Answers["node-1[0]"][0] = json.RawMessage(`"changed"`)
	a.Done["node-1[2]"][0] = 'X'
	a.Nest.Used = 99
	same(t, "after changing the put checkpoint", want, get(t, s, "iso", a.ID))

	got := get(t, s, "iso", "")
	got.Next[0] = "changed"
	got.Counters["loop"] = 99
	got.Interrupt.Node = "changed"
	got.Resumes[0] = json.RawMessage(`"changed"`)
	got.Interrupts[1].Branch = "changed"
	got.Answers["node-1[0]"][0] = json.RawMessage(`"changed"`)
	got.Done["node-1[2]"][0] = 'X'
	got.Nest.Used = 99
	same(t, "after changing a got checkpoint", want, get(t, s, "iso", ""))
}

func testNotFound(t *testing.T, s checkpoint.Saver) {
	wantNotFound(t, s, "nothread", "")
	wantNotFound(t, s, "nothread", checkpoint.NewID())
	cps := chain(t, s, "nf", nil, `1`, `2`)
	wantNotFound(t, s, "nf", checkpoint.NewID())
	wantNotFound(t, s, "nothread", cps[0].ID)
	if got := list(t, s, "nothread", 0); len(got) != 0 {
		t.Errorf("list of unknown thread: got %d checkpoints, want none", len(got))
	}
	if err := s.DeleteThread(t.Context(), "nothread"); err != nil {
		t.Errorf("delete unknown thread: %v", err)
	}
	wantHistory(t, s, "nf", cps...)
}

func testCompareAndSet(t *testing.T, s checkpoint.Saver) {
	// On an empty thread, the first checkpoint must have no parent and seq 0.
	for _, tc := range []struct {
		name   string
		parent string
		seq    int64
	}{
		{"parent on new thread", checkpoint.NewID(), 0},
		{"parent and seq on new thread", checkpoint.NewID(), 1},
		{"seq 1 on new thread", "", 1},
		{"negative seq on new thread", "", -1},
	} {
		cp := bare("cas", nil, `"x"`)
		cp.ParentID, cp.Seq = tc.parent, tc.seq
		if err := s.Put(t.Context(), cp); !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("%s: got %v, want ErrConflict", tc.name, err)
		}
		wantNotFound(t, s, "cas", "")
		wantNotFound(t, s, "cas", cp.ID)
	}

	cps := chain(t, s, "cas", nil, `"a"`, `"b"`)
	a, b := cps[0], cps[1]
	for _, tc := range []struct {
		name   string
		parent string
		seq    int64
	}{
		{"second first checkpoint", "", 0},
		{"parent not head", a.ID, 1},
		{"parent not head, seq after head", a.ID, 2},
		{"head with its own seq", b.ID, 1},
		{"head with seq skipped", b.ID, 3},
		{"head with seq 0", b.ID, 0},
		{"unknown parent", checkpoint.NewID(), 2},
		{"no parent, seq after head", "", 2},
	} {
		cp := bare("cas", b, `"lost"`)
		cp.ParentID, cp.Seq = tc.parent, tc.seq
		if err := s.Put(t.Context(), cp); !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("%s: got %v, want ErrConflict", tc.name, err)
		}
		wantNotFound(t, s, "cas", cp.ID)
		if h := get(t, s, "cas", ""); h.ID != b.ID {
			t.Errorf("%s: head is %s (seq %d), want %s", tc.name, h.ID, h.Seq, b.ID)
		}
	}
	wantHistory(t, s, "cas", a, b)

	// The rightful child still goes in.
	c := bare("cas", b, `"c"`)
	put(t, s, c)
	wantHistory(t, s, "cas", a, b, c)
}

func testConcurrentChildren(t *testing.T, s checkpoint.Saver) {
	const n = 50
	head := chain(t, s, "race", nil, `{"n":0}`)[0]
	cps := make([]*checkpoint.Checkpoint, n)
	errs := make([]error, n)
	for i := range cps {
		cps[i] = bare("race", head, fmt.Sprintf(`{"n":0,"writer":%d}`, i))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range cps {
		wg.Go(func() {
			<-start
			errs[i] = s.Put(t.Context(), cps[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("writers %d and %d both put a child of the same head", winner, i)
			}
			winner = i
		case !errors.Is(err, checkpoint.ErrConflict):
			t.Errorf("writer %d: got %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	wantHistory(t, s, "race", head, cps[winner])
	for i, cp := range cps {
		if i != winner {
			wantNotFound(t, s, "race", cp.ID)
		}
	}
}

// testConcurrentChain has writers append to one thread until each has
// added its share, reading the head and retrying on conflict, and checks
// the history is one line holding every winning write.
func testConcurrentChain(t *testing.T, s checkpoint.Saver) {
	const writers, each = 6, 15
	put(t, s, bare("line", nil, `[]`))
	var mu sync.Mutex
	won := map[string]string{} // id -> state
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < each; {
				head, err := s.Get(t.Context(), "line", "")
				if err != nil {
					t.Errorf("writer %d: get head: %v", w, err)
					return
				}
				st := fmt.Sprintf(`%s,"w%d-%d"]`, bytes.TrimSuffix(head.State, []byte("]")), w, i)
				if head.Seq == 0 {
					st = fmt.Sprintf(`["w%d-%d"]`, w, i)
				}
				cp := bare("line", head, st)
				err = s.Put(t.Context(), cp)
				if errors.Is(err, checkpoint.ErrConflict) {
					continue
				}
				if err != nil {
					t.Errorf("writer %d: put: %v", w, err)
					return
				}
				mu.Lock()
				won[cp.ID] = st
				mu.Unlock()
				i++
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	h := list(t, s, "line", 0)
	if len(h) != writers*each+1 {
		t.Fatalf("history has %d checkpoints, want %d", len(h), writers*each+1)
	}
	for i, cp := range h {
		if want := int64(len(h) - 1 - i); cp.Seq != want {
			t.Errorf("list [%d]: seq %d, want %d", i, cp.Seq, want)
		}
		if i+1 < len(h) && cp.ParentID != h[i+1].ID {
			t.Errorf("list [%d] seq %d: parent %s, want %s", i, cp.Seq, cp.ParentID, h[i+1].ID)
		}
		if i+1 == len(h) {
			continue
		}
		if st, ok := won[cp.ID]; !ok {
			t.Errorf("list [%d]: %s was never reported as written", i, cp.ID)
		} else if string(cp.State) != st {
			t.Errorf("list [%d]: state %s, want %s", i, cp.State, st)
		}
	}
}

func testList(t *testing.T, s checkpoint.Saver) {
	var cps []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	for i := range 10 {
		head = sample("list", head, i, fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, bytes.Repeat([]byte("x"), 40*i)))
		put(t, s, head)
		cps = append(cps, head)
	}
	for _, tc := range []struct {
		limit int
		want  int // how many, newest first
	}{
		{0, 10}, {-1, 10}, {1, 1}, {3, 3}, {9, 9}, {10, 10}, {11, 10}, {1000, 10},
	} {
		got := list(t, s, "list", tc.limit)
		if len(got) != tc.want {
			t.Errorf("limit %d: got %d checkpoints, want %d", tc.limit, len(got), tc.want)
			continue
		}
		for i := range got {
			same(t, fmt.Sprintf("limit %d [%d]", tc.limit, i), cps[9-i], got[i])
		}
	}
}

func testUndo(t *testing.T, s checkpoint.Saver) {
	a := sample("undo", nil, 1, `{"v":"a"}`)
	put(t, s, a)
	b := sample("undo", a, 2, `{"v":"b","more":true}`)
	b.Interrupt = nil
	put(t, s, b)
	c := sample("undo", b, 5, `{"v":"c"}`)
	put(t, s, c)

	d, err := checkpoint.Undo(t.Context(), s, "undo", a.ID)
	if err != nil {
		t.Fatalf("undo to %s: %v", a.ID, err)
	}
	want := *a
	want.ID, want.ParentID, want.Seq, want.Step = d.ID, c.ID, 3, c.Step
	want.Meta = checkpoint.Meta{Source: checkpoint.SourceUndo, From: a.ID, Created: d.Meta.Created}
	same(t, "undo result", &want, d)
	same(t, "head after undo", &want, get(t, s, "undo", ""))
	wantHistory(t, s, "undo", a, b, c, &want)

	// Undo the undo: back to c's state.
	e, err := checkpoint.Undo(t.Context(), s, "undo", c.ID)
	if err != nil {
		t.Fatalf("undo to %s: %v", c.ID, err)
	}
	if h := get(t, s, "undo", ""); h.ID != e.ID || h.Seq != 4 || string(h.State) != `{"v":"c"}` || h.Meta.From != c.ID || h.Meta.Source != checkpoint.SourceUndo {
		t.Errorf("head after second undo: %s seq %d state %s from %s source %s", h.ID, h.Seq, h.State, h.Meta.From, h.Meta.Source)
	}
	if _, err := checkpoint.Undo(t.Context(), s, "undo", checkpoint.NewID()); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("undo to an unknown checkpoint: got %v, want ErrNotFound", err)
	}
	if n := len(list(t, s, "undo", 0)); n != 5 {
		t.Errorf("history has %d checkpoints after undos, want 5", n)
	}
}

func testForkSameThread(t *testing.T, s checkpoint.Saver) {
	a := sample("fork", nil, 1, `{"v":["a"]}`)
	put(t, s, a)
	b := sample("fork", a, 2, `{"v":["a","b"]}`)
	put(t, s, b)
	c := sample("fork", b, 3, `{"v":["a","b","c"]}`)
	put(t, s, c)

	edit := func(st json.RawMessage) (json.RawMessage, error) {
		return bytes.Replace(st, []byte(`"b"`), []byte(`"B"`), 1), nil
	}
	f, err := checkpoint.Fork(t.Context(), s, "fork", b.ID, "fork", edit)
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	want := *b
	want.ID, want.ParentID, want.Seq, want.Step = f.ID, c.ID, 3, c.Step
	want.State = json.RawMessage(`{"v":["a","B"]}`)
	want.Meta = checkpoint.Meta{Source: checkpoint.SourceFork, From: b.ID, Created: f.Meta.Created}
	same(t, "fork result", &want, f)
	same(t, "head after fork", &want, get(t, s, "fork", ""))
	same(t, "forked-from checkpoint", b, get(t, s, "fork", b.ID))

	// A failing edit stores nothing.
	boom := errors.New("boom")
	_, err = checkpoint.Fork(t.Context(), s, "fork", a.ID, "fork", func(json.RawMessage) (json.RawMessage, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("fork with failing edit: got %v, want the edit's error", err)
	}
	wantHistory(t, s, "fork", a, b, c, &want)
}

func testForkNewThread(t *testing.T, s checkpoint.Saver) {
	a := sample("src", nil, 4, `{"v":"a"}`)
	put(t, s, a)
	b := sample("src", a, 5, `{"v":"b"}`)
	put(t, s, b)

	f, err := checkpoint.Fork(t.Context(), s, "src", a.ID, "dst", nil)
	if err != nil {
		t.Fatalf("fork to a new thread: %v", err)
	}
	want := *a
	want.Thread, want.ID, want.ParentID, want.Seq = "dst", f.ID, "", 0
	want.Meta = checkpoint.Meta{Source: checkpoint.SourceFork, From: a.ID, Created: f.Meta.Created}
	same(t, "fork result", &want, f)
	same(t, "new thread head", &want, get(t, s, "dst", ""))
	wantHistory(t, s, "src", a, b)

	// A second fork appends to the branch.
	g, err := checkpoint.Fork(t.Context(), s, "src", b.ID, "dst", nil)
	if err != nil {
		t.Fatalf("second fork: %v", err)
	}
	if g.Seq != 1 || g.ParentID != f.ID || string(g.State) != `{"v":"b"}` {
		t.Errorf("second fork: seq %d parent %s state %s, want seq 1 parent %s state %s", g.Seq, g.ParentID, g.State, f.ID, b.State)
	}
	same(t, "branch head", g, get(t, s, "dst", ""))
	wantHistory(t, s, "dst", &want, g)
	wantNotFound(t, s, "dst", a.ID)
}

func testDeleteThread(t *testing.T, s checkpoint.Saver) {
	gone := chain(t, s, "gone", nil, `{"n":1}`, `{"n":1,"m":2}`, `{"n":1,"m":2,"k":3}`)
	kept := chain(t, s, "kept", nil, `{"n":1}`, `{"n":2}`)
	if err := s.DeleteThread(t.Context(), "gone"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantNotFound(t, s, "gone", "")
	for _, cp := range gone {
		wantNotFound(t, s, "gone", cp.ID)
	}
	if got := list(t, s, "gone", 0); len(got) != 0 {
		t.Errorf("list after delete: got %d checkpoints, want none", len(got))
	}
	wantHistory(t, s, "kept", kept...)
	if err := s.DeleteThread(t.Context(), "gone"); err != nil {
		t.Errorf("second delete: %v", err)
	}

	// A parent from before the delete no longer counts.
	stale := bare("gone", gone[2], `{"stale":true}`)
	if err := s.Put(t.Context(), stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("put after a deleted head: got %v, want ErrConflict", err)
	}
	// The thread starts over.
	again := chain(t, s, "gone", nil, `{"n":1,"m":2}`, `{"n":1,"m":2,"k":4}`, `{"n":1,"m":2,"k":4,"j":5}`)
	wantHistory(t, s, "gone", again...)
	for _, cp := range again {
		same(t, "restarted thread by id", cp, get(t, s, "gone", cp.ID))
	}
}

func testThreadsIsolated(t *testing.T, s checkpoint.Saver) {
	// Names that are prefixes of each other or contain separators catch
	// backends that build keys by concatenation.
	threads := []string{"t", "t1", "t:1", "t/1", "t 1", "T"}
	heads := map[string]*checkpoint.Checkpoint{}
	hist := map[string][]*checkpoint.Checkpoint{}
	for round := range 4 {
		for i, th := range threads {
			cp := bare(th, heads[th], fmt.Sprintf(`{"thread":%q,"round":%d,"pad":"%s"}`, th, round, bytes.Repeat([]byte{'a' + byte(i)}, 30)))
			put(t, s, cp)
			heads[th] = cp
			hist[th] = append(hist[th], cp)
		}
	}
	for i, th := range threads {
		wantHistory(t, s, th, hist[th]...)
		same(t, "head of "+th, heads[th], get(t, s, th, ""))
		other := threads[(i+1)%len(threads)]
		wantNotFound(t, s, th, heads[other].ID)
		// The head of another thread is not a parent here.
		cp := bare(th, heads[other], `{}`)
		if err := s.Put(t.Context(), cp); !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("put on %s after the head of %s: got %v, want ErrConflict", th, other, err)
		}
	}
}

// bigState returns a JSON document of about n bytes whose content varies
// with seed.
func bigState(n int, seed byte) []byte {
	b := make([]byte, 0, n+32)
	b = append(b, `{"blob":"`...)
	x := uint32(seed) + 1
	for len(b) < n-2 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b = append(b, "abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	return append(b, `"}`...)
}

func testLargeState(t *testing.T, s checkpoint.Saver) {
	st := bigState(1<<20, 1)
	a := bare("big", nil, string(st))
	put(t, s, a)
	// A small edit in the middle, an append, and a new document.
	mid := bytes.Clone(st)
	copy(mid[len(mid)/2:], "EDITED")
	b := bare("big", a, string(mid))
	put(t, s, b)
	c := bare("big", b, string(append(bytes.Clone(mid[:len(mid)-2]), `tail"}`...)))
	put(t, s, c)
	d := bare("big", c, string(bigState(1<<20+7, 2)))
	put(t, s, d)

	same(t, "head", d, get(t, s, "big", ""))
	for _, cp := range []*checkpoint.Checkpoint{a, b, c, d} {
		same(t, fmt.Sprintf("by id seq %d", cp.Seq), cp, get(t, s, "big", cp.ID))
	}
	wantHistory(t, s, "big", a, b, c, d)
}

// testLongHistory writes 300 checkpoints whose state is a growing JSON list,
// with an occasional edit near the start and an occasional shrink, and
// reads every one back.
func testLongHistory(t *testing.T, s checkpoint.Saver) {
	const n = 300
	var cps []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	msgs := []string{}
	for i := range n {
		switch {
		case i%53 == 52:
			msgs[0] = fmt.Sprintf(`{"role":"system","edit":%d}`, i)
		case i%37 == 36:
			msgs = msgs[:len(msgs)/2]
		default:
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","i":%d,"text":"%s"}`, i, bytes.Repeat([]byte{'a' + byte(i%26)}, 160)))
		}
		st, err := json.Marshal(map[string]any{"step": "fixed", "messages": json.RawMessage("[" + joinComma(msgs) + "]")})
		if err != nil {
			t.Fatal(err)
		}
		cp := bare("long", head, string(st))
		cp.Step = i
		put(t, s, cp)
		same(t, fmt.Sprintf("head after put %d", i), cp, get(t, s, "long", ""))
		cps = append(cps, cp)
		head = cp
	}
	// Read by id in an order unrelated to writing: from the end, striding.
	for k := range n {
		cp := cps[(k*97+n-1)%n]
		same(t, fmt.Sprintf("by id seq %d", cp.Seq), cp, get(t, s, "long", cp.ID))
	}
	wantHistory(t, s, "long", cps...)
	got := list(t, s, "long", 5)
	if len(got) != 5 {
		t.Fatalf("list limit 5: got %d", len(got))
	}
	for i := range got {
		same(t, fmt.Sprintf("list limit 5 [%d]", i), cps[n-1-i], got[i])
	}
}

// trimmer is a saver that deletes a thread's older checkpoints, as every
// saver of this module does (the server's history policy calls it).
type trimmer interface {
	TrimHistory(ctx context.Context, thread string, keep int) (int, error)
}

// testTrimHistory: TrimHistory keeps the newest checkpoints, each as it
// was (the oldest kept no longer needs the deltas before it), forgets
// the older, leaves other threads alone, and the thread goes on.
func testTrimHistory(t *testing.T, s checkpoint.Saver) {
	tr, ok := s.(trimmer)
	if !ok {
		t.Skipf("%T has no TrimHistory", s)
	}
	ctx := t.Context()
	// Growing states, so that most are stored as deltas.
	var states []string
	msgs := []string{}
	for i := range 12 {
		msgs = append(msgs, fmt.Sprintf("%q", bytes.Repeat([]byte{'a' + byte(i)}, 200)))
		states = append(states, `{"messages":[`+joinComma(msgs)+`]}`)
	}
	cps := chain(t, s, "trim", nil, states...)
	other := chain(t, s, "trim-other", nil, states[:4]...)
	if _, err := tr.TrimHistory(ctx, "trim", 0); err == nil {
		t.Fatal("keep 0: no error")
	}
	n, err := tr.TrimHistory(ctx, "trim", 5)
	if err != nil || n != 7 {
		t.Fatalf("trim to 5: %d, %v; want 7 deleted", n, err)
	}
	wantHistory(t, s, "trim", cps[7:]...)
	for _, cp := range cps[:7] {
		wantNotFound(t, s, "trim", cp.ID)
	}
	for _, cp := range cps[7:] {
		same(t, fmt.Sprintf("kept seq %d", cp.Seq), cp, get(t, s, "trim", cp.ID))
	}
	wantHistory(t, s, "trim-other", other...)
	if n, err := tr.TrimHistory(ctx, "trim", 5); err != nil || n != 0 {
		t.Fatalf("trim to 5 again: %d, %v; want none deleted", n, err)
	}
	if n, err := tr.TrimHistory(ctx, "nowhere", 3); err != nil || n != 0 {
		t.Fatalf("trim a thread with no checkpoints: %d, %v", n, err)
	}
	// The thread goes on, and is trimmed again from where it was cut.
	more := chain(t, s, "trim", cps[11], `{"messages":[]}`, states[11])
	if n, err := tr.TrimHistory(ctx, "trim", 2); err != nil || n != 5 {
		t.Fatalf("trim to 2 after two more: %d, %v; want 5 deleted", n, err)
	}
	wantHistory(t, s, "trim", more...)
	got := list(t, s, "trim", 5)
	if len(got) != 2 {
		t.Fatalf("list limit 5 after the trim: %d checkpoints, want 2", len(got))
	}
	same(t, "head after the trims", more[1], get(t, s, "trim", ""))
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

type closer interface{ Close() error }

func closeSaver(t *testing.T, s checkpoint.Saver) {
	t.Helper()
	if c, ok := s.(closer); ok {
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
}

// testReopen closes a saver (when it has a Close method) and opens the
// storage again: everything is there, and the thread goes on.
func testReopen(t *testing.T, st Storage) {
	loc := st.New(t)
	s := st.Open(t, loc)
	var cps []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	for i := range 40 {
		head = sample("reopen", head, i, fmt.Sprintf(`{"list":[%s0]}`, bytes.Repeat([]byte(`"abcdefghij",`), i)))
		put(t, s, head)
		cps = append(cps, head)
	}
	other := chain(t, s, "reopen-other", nil, `1`, `2`)
	closeSaver(t, s)

	r := st.Open(t, loc)
	wantHistory(t, r, "reopen", cps...)
	wantHistory(t, r, "reopen-other", other...)
	for _, cp := range cps {
		same(t, "reopened by id", cp, get(t, r, "reopen", cp.ID))
	}
	// The reopened saver continues the thread where it was.
	next := sample("reopen", head, 40, `{"list":["after reopen"]}`)
	put(t, r, next)
	stale := bare("reopen", head, `{}`)
	if err := r.Put(t.Context(), stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("stale put after reopen: got %v, want ErrConflict", err)
	}
	same(t, "head after reopen", next, get(t, r, "reopen", ""))
}

// testTwoInstances uses two savers on the same storage at once, as two
// processes would: a write from one makes the other's parent stale, and
// each reads what the other wrote.
func testTwoInstances(t *testing.T, st Storage) {
	loc := st.New(t)
	a, b := st.Open(t, loc), st.Open(t, loc)

	state := `{"msgs":["one"]}`
	cps := chain(t, a, "shared", nil, state)
	for i := range 5 {
		state = state[:len(state)-2] + fmt.Sprintf(`,"a%d"]}`, i)
		cps = append(cps, chain(t, a, "shared", cps[len(cps)-1], state)...)
	}
	aHead := cps[len(cps)-1]

	// b reads a's head and appends to it.
	bHead := get(t, b, "shared", "")
	same(t, "b reads a's head", aHead, bHead)
	b1 := bare("shared", bHead, state[:len(state)-2]+`,"b1"]}`)
	put(t, b, b1)

	// a's view of the head is stale now.
	lost := bare("shared", aHead, state[:len(state)-2]+`,"a-lost"]}`)
	if err := a.Put(t.Context(), lost); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("put on a stale head from the other instance: got %v, want ErrConflict", err)
	}
	wantNotFound(t, b, "shared", lost.ID)
	same(t, "a reads b's write", b1, get(t, a, "shared", ""))

	// Both go on from the real head, alternately.
	head := b1
	for i := range 6 {
		s := a
		if i%2 == 1 {
			s = b
		}
		cp := bare("shared", head, string(head.State[:len(head.State)-2])+fmt.Sprintf(`,"x%d"]}`, i))
		put(t, s, cp)
		cps = append(cps, cp)
		head = cp
	}
	// b1 sits between a's chain and the alternating writes.
	all := append(append(slices.Clone(cps[:6]), b1), cps[6:]...)
	wantHistory(t, a, "shared", all...)
	wantHistory(t, b, "shared", all...)
	for _, cp := range all {
		same(t, "a by id", cp, get(t, a, "shared", cp.ID))
		same(t, "b by id", cp, get(t, b, "shared", cp.ID))
	}
}
