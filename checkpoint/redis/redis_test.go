package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/savertest"
)

// envURL names the variable with the Redis server the tests use; each test
// works under a key prefix of its own, whose keys are deleted when it ends.
const envURL = "LOOM_TEST_REDIS_URL"

const defaultURL = "redis://127.0.0.1:6379/0"

var reach struct {
	once sync.Once
	url  string
	err  error
}

// serverURL returns the test server's URL. When the server cannot be
// reached it skips the test, or fails it under CI=true, where the server is
// part of the test setup.
func serverURL(t testing.TB) string {
	t.Helper()
	reach.once.Do(func() {
		reach.url = os.Getenv(envURL)
		if reach.url == "" {
			reach.url = defaultURL
		}
		o, err := goredis.ParseURL(reach.url)
		if err != nil {
			reach.err = err
			return
		}
		c := goredis.NewClient(o)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reach.err = c.Ping(ctx).Err()
	})
	if reach.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis unreachable under CI=true (set %s, default %s): %v", envURL, defaultURL, reach.err)
		}
		t.Skipf("redis unreachable; set %s to a reachable server (default %s): %v", envURL, defaultURL, reach.err)
	}
	return reach.url
}

// rawClient is a plain client to the test server, closed when t ends.
func rawClient(t testing.TB) *goredis.Client {
	t.Helper()
	o, err := goredis.ParseURL(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// newPrefix returns a key prefix no other test uses; its keys are deleted
// when t ends.
func newPrefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	prefix := "loomtest:" + hex.EncodeToString(b[:]) + ":"
	c := rawClient(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("clean up %s*: %v", prefix, err)
		}
	})
	return prefix
}

func open(t testing.TB, prefix string) *Saver {
	t.Helper()
	s, err := Open(context.Background(), serverURL(t), WithPrefix(prefix))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSaver(t *testing.T) {
	savertest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, newPrefix(t))
	})
}

func TestReopen(t *testing.T) {
	var mu sync.Mutex
	prefixes := map[string]string{} // savertest path -> prefix
	savertest.RunReopen(t, func(t *testing.T, path string) checkpoint.Saver {
		mu.Lock()
		p, ok := prefixes[path]
		if !ok {
			p = newPrefix(t)
			prefixes[path] = p
		}
		mu.Unlock()
		return open(t, p)
	})
}

// TestKeys checks the default prefix and the key layout, that savers with
// different prefixes do not see each other, and that DeleteThread leaves
// no key behind.
func TestKeys(t *testing.T) {
	c := rawClient(t)
	ctx := t.Context()
	s, err := Open(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	thread := "loomtest-" + newPrefix(t)
	cp := checkpoint.Next(thread, nil, checkpoint.SourceInput)
	cp.State = []byte(`{"a":1}`)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	defer s.DeleteThread(context.Background(), thread)
	keys := []string{"loom:{" + thread + "}:log", "loom:{" + thread + "}:ids", "loom:{" + thread + "}:full"}
	if n, err := c.Exists(ctx, keys...).Result(); err != nil || n != 3 {
		t.Errorf("keys %q: %d exist (%v), want 3", keys, n, err)
	}

	other := open(t, newPrefix(t))
	if _, err := other.Get(ctx, thread, ""); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("another prefix sees the thread: %v", err)
	}
	if err := s.DeleteThread(ctx, thread); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, keys...).Result(); err != nil || n != 0 {
		t.Errorf("after delete: %d keys left (%v), want 0", n, err)
	}
}

// TestBraceThreads uses thread names with the characters the keys are made
// of: each stays a thread of its own.
func TestBraceThreads(t *testing.T) {
	s := open(t, newPrefix(t))
	ctx := t.Context()
	threads := []string{"", "a", "a}", "{a}", "a}:log", "a}:ids", "}", "{", "a}:full}"}
	for i, th := range threads {
		cp := checkpoint.Next(th, nil, checkpoint.SourceInput)
		cp.State = fmt.Appendf(nil, `{"i":%d}`, i)
		if err := s.Put(ctx, cp); err != nil {
			t.Fatalf("put on %q: %v", th, err)
		}
	}
	for i, th := range threads {
		got, err := s.List(ctx, th, 0)
		if err != nil {
			t.Fatalf("list %q: %v", th, err)
		}
		if len(got) != 1 || string(got[0].State) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Errorf("thread %q: got %d checkpoints, want just its own", th, len(got))
		}
	}
}

// TestScriptsFlushed checks that a server that lost its script cache (a
// restart, SCRIPT FLUSH) is served again without error.
func TestScriptsFlushed(t *testing.T) {
	s := open(t, newPrefix(t))
	ctx := t.Context()
	a := checkpoint.Next("t", nil, checkpoint.SourceInput)
	a.State = []byte(`[1]`)
	if err := s.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := rawClient(t).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	b := checkpoint.Next("t", a, checkpoint.SourceStep)
	b.State = []byte(`[1,2]`)
	if err := s.Put(ctx, b); err != nil {
		t.Fatalf("put after SCRIPT FLUSH: %v", err)
	}
	if got, err := s.Get(ctx, "t", ""); err != nil || got.ID != b.ID {
		t.Fatalf("get after SCRIPT FLUSH: %v, %v", got, err)
	}
}

// TestOpenErrors: a bad URL or an address where nothing listens gives an
// error, which never shows the password.
func TestOpenErrors(t *testing.T) {
	for _, u := range []string{
		"redis://:s3cretpw@127.0.0.1:1/0?dial_timeout=2s",
		"redis://:s3cretpw@127.0.0.1:1/notanumber",
		"http://:s3cretpw@127.0.0.1:6379/0",
		"redis://:s3cretpw@127.0.0.1:6379/0?no_such_option=1",
	} {
		s, err := Open(t.Context(), u)
		if err == nil {
			s.Close()
			t.Errorf("open %s: no error", u)
			continue
		}
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("open error shows the password: %v", err)
		}
	}
}

func TestClosed(t *testing.T) {
	s, err := Open(t.Context(), serverURL(t), WithPrefix(newPrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := s.Put(t.Context(), checkpoint.Next("t", nil, checkpoint.SourceInput)); err == nil {
		t.Error("put after close: no error")
	}
	if _, err := s.Get(t.Context(), "t", ""); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("get after close: got %v, want an error other than ErrNotFound", err)
	}
}

// TestContextCancelled checks that a done context stops a command before
// it stores anything.
func TestContextCancelled(t *testing.T) {
	s := open(t, newPrefix(t))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cp := checkpoint.Next("t", nil, checkpoint.SourceInput)
	if err := s.Put(ctx, cp); !errors.Is(err, context.Canceled) {
		t.Errorf("put with a cancelled context: got %v, want context.Canceled", err)
	}
	if _, err := s.Get(t.Context(), "t", ""); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("after the cancelled put: got %v, want ErrNotFound", err)
	}
}

// chainOf puts n checkpoints on thread, each appending a message to a list
// of about 2 KB, and returns them oldest first.
func chainOf(t *testing.T, s checkpoint.Saver, thread string, n int) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	msgs := `"` + strings.Repeat("history ", 250) + `"`
	for i := range n {
		msgs += fmt.Sprintf(`,{"i":%d,"text":"message number %d"}`, i, i)
		cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
		cp.State = []byte(`{"messages":[` + msgs + `]}`)
		cp.Next = []string{"agent"}
		if err := s.Put(t.Context(), cp); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		out = append(out, cp)
		head = cp
	}
	return out
}

// records returns the parsed records of thread, by seq, and the seqs its
// full set holds.
func records(t *testing.T, s *Saver, thread string) ([]checkpoint.Row, []string) {
	t.Helper()
	c := rawClient(t)
	k := s.keys(thread)
	raw, err := c.LRange(t.Context(), k[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]checkpoint.Row, len(raw))
	for i, r := range raw {
		if err := parseRecord([]byte(r), &out[i]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	fulls, err := c.ZRange(t.Context(), k[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return out, fulls
}

// TestStoresDeltas checks that a chain of appends is stored as one full
// state followed by deltas the size of the appends, that the full set
// matches the records, and that a long chain of small deltas is cut by a
// full state now and then.
func TestStoresDeltas(t *testing.T) {
	s := open(t, newPrefix(t))
	cps := chainOf(t, s, "d", 10)
	got, fulls := records(t, s, "d")
	if len(got) != 10 {
		t.Fatalf("%d records, want 10", len(got))
	}
	if !got[0].Full || string(got[0].State) != string(cps[0].State) {
		t.Errorf("first record: full %v, %d bytes; want the full %d-byte state", got[0].Full, len(got[0].State), len(cps[0].State))
	}
	for i, r := range got[1:] {
		if r.Full || len(r.State) > 60 {
			t.Errorf("record %d: full %v, %d bytes; want a delta of at most 60 bytes", i+1, r.Full, len(r.State))
		}
	}
	if strings.Join(fulls, ",") != "0" {
		t.Errorf("full set %q, want [0]", fulls)
	}

	chainOf(t, s, "long", 200)
	got, fulls = records(t, s, "long")
	var want []string
	run := 0
	for i, r := range got {
		if r.Full {
			want = append(want, fmt.Sprint(i))
			run = 0
			continue
		}
		if run++; run > 64 {
			t.Fatalf("record %d: %d deltas in a row, want a full state at least every 64", i, run)
		}
	}
	if len(want) < 3 || strings.Join(fulls, ",") != strings.Join(want, ",") {
		t.Errorf("full set %q, full records %q; want the same, at least 3", fulls, want)
	}
}

// TestCorruptRecords breaks stored records and checks that reads fail with
// ErrCorrupt naming the thread and the broken checkpoint, while reads that
// do not need the record still work.
func TestCorruptRecords(t *testing.T) {
	s := open(t, newPrefix(t))
	c := rawClient(t)
	// rewrite re-encodes the record at seq with change applied.
	rewrite := func(t *testing.T, thread string, seq int64, change func(rw *checkpoint.Row)) {
		t.Helper()
		k := s.keys(thread)
		raw, err := c.LIndex(t.Context(), k[0], seq).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		var rw checkpoint.Row
		if err := parseRecord(raw, &rw); err != nil {
			t.Fatal(err)
		}
		change(&rw)
		rec := appendRecord(nil, &checkpoint.Checkpoint{ID: rw.ID, ParentID: rw.Parent, Seq: rw.Seq, Step: int(rw.Step)}, rw.Full, rw.Meta, rw.State)
		if err := c.LSet(t.Context(), k[0], seq, rec).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		brk    func(t *testing.T, thread string, keys []string)
		bad    int    // seq of the checkpoint the error must name
		name2  string // what else the error must say, when the id cannot be read
		readOK []int  // seqs that must still read
	}{
		{"meta not JSON", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 4, func(rw *checkpoint.Row) { rw.Meta = []byte(`{"next":`) })
		}, 4, "", []int{0, 3}},
		{"meta wrong type", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 4, func(rw *checkpoint.Row) { rw.Meta = []byte(`{"next":"agent"}`) })
		}, 4, "", []int{3}},
		{"delta truncated", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 2, func(rw *checkpoint.Row) { rw.State = rw.State[:1] })
		}, 2, "", []int{0, 1}},
		{"delta empty", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 2, func(rw *checkpoint.Row) { rw.State = nil })
		}, 2, "", []int{1}},
		{"delta past its base", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 2, func(rw *checkpoint.Row) { rw.State = []byte{0xff, 0xff, 0x03, 0x00} })
		}, 2, "", []int{1}},
		{"full flag lost", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 0, func(rw *checkpoint.Row) { rw.Full = false })
		}, 0, "", nil},
		{"parent rewritten", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 3, func(rw *checkpoint.Row) { rw.Parent = "elsewhere" })
		}, 3, "", []int{2}},
		{"seq rewritten", func(t *testing.T, th string, _ []string) {
			rewrite(t, th, 3, func(rw *checkpoint.Row) { rw.Seq = 7 })
		}, 3, "", []int{2}},
		{"record missing", func(t *testing.T, th string, k []string) {
			// Remove seq 2: the record of seq 3 moves to index 2.
			if err := c.LSet(t.Context(), k[0], 2, "gone").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.LRem(t.Context(), k[0], 1, "gone").Err(); err != nil {
				t.Fatal(err)
			}
		}, 3, "", []int{0, 1}},
		{"record truncated", func(t *testing.T, th string, k []string) {
			raw, err := c.LIndex(t.Context(), k[0], 2).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			// Keep the version, flags and id, cut the rest.
			n := 3 + len(raw[3:3+raw[2]])
			if err := c.LSet(t.Context(), k[0], 2, raw[:n+1]).Err(); err != nil {
				t.Fatal(err)
			}
		}, 2, "", []int{0, 1}},
		{"record garbage", func(t *testing.T, th string, k []string) {
			if err := c.LSet(t.Context(), k[0], 2, "\x07garbage").Err(); err != nil {
				t.Fatal(err)
			}
		}, -1, "seq 2", []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thread := "broken thread " + tc.name
			cps := chainOf(t, s, thread, 5)
			if r, _ := records(t, s, thread); !r[0].Full || r[1].Full || r[4].Full {
				t.Fatalf("want a full record followed by deltas, got %+v", r)
			}
			tc.brk(t, thread, s.keys(thread))

			// A fresh saver, so nothing comes from a cache.
			r := open(t, s.prefix)
			want := tc.name2
			if tc.bad >= 0 {
				want = cps[tc.bad].ID
			}
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, checkpoint.ErrCorrupt) {
					t.Errorf("%s: got %v, want ErrCorrupt", what, err)
					return
				}
				if msg := err.Error(); !strings.Contains(msg, thread) || !strings.Contains(msg, want) {
					t.Errorf("%s: error %q does not name %s and %s", what, msg, thread, want)
				}
			}
			_, err := r.Get(t.Context(), thread, "")
			check("get head", err)
			_, err = r.Get(t.Context(), thread, cps[4].ID)
			check("get by id", err)
			_, err = r.List(t.Context(), thread, 0)
			check("list", err)
			_, err = r.List(t.Context(), thread, 1)
			check("list 1", err)
			for _, seq := range tc.readOK {
				got, err := r.Get(t.Context(), thread, cps[seq].ID)
				if err != nil {
					t.Errorf("get seq %d: %v", seq, err)
				} else if string(got.State) != string(cps[seq].State) {
					t.Errorf("get seq %d: wrong state", seq)
				}
			}
		})
	}

	// An id whose seq is past the log.
	cps := chainOf(t, s, "dangling", 2)
	if err := c.HSet(t.Context(), s.keys("dangling")[1], "ghost", 5).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "dangling", "ghost"); !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "dangling") {
		t.Errorf("get an id past the log: got %v, want ErrCorrupt naming the thread", err)
	}
	if got, err := s.Get(t.Context(), "dangling", cps[1].ID); err != nil || got.ID != cps[1].ID {
		t.Errorf("get a good id next to it: %v, %v", got, err)
	}
}

// TestTwoSaversDeltas has two savers on one prefix write deltas against
// what each has cached, including a parent the other wrote and a stale
// parent, and checks every state reads back exactly from a third saver.
func TestTwoSaversDeltas(t *testing.T) {
	p := newPrefix(t)
	a, b := open(t, p), open(t, p)
	ctx := t.Context()
	cps := chainOf(t, a, "t", 3)
	st := func(cp *checkpoint.Checkpoint, add string) []byte {
		return []byte(strings.TrimSuffix(string(cp.State), "]}") + add + "]}")
	}
	headB, err := b.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	c3 := checkpoint.Next("t", headB, checkpoint.SourceStep)
	c3.State = st(headB, `,"b3"`)
	if err := b.Put(ctx, c3); err != nil {
		t.Fatal(err)
	}
	stale := checkpoint.Next("t", cps[2], checkpoint.SourceStep)
	stale.State = st(cps[2], `,"stale"`)
	if err := a.Put(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("stale put: got %v, want ErrConflict", err)
	}
	headA, err := a.Get(ctx, "t", "")
	if err != nil || headA.ID != c3.ID {
		t.Fatalf("a's head: %v, %v; want %s", headA, err, c3.ID)
	}
	c4 := checkpoint.Next("t", headA, checkpoint.SourceStep)
	c4.State = st(headA, `,"a4"`)
	if err := a.Put(ctx, c4); err != nil {
		t.Fatal(err)
	}
	stored, _ := records(t, a, "t")
	if len(stored) != 5 || stored[3].Full || stored[4].Full {
		t.Fatalf("want deltas at seq 3 (b on a's write) and 4 (a on b's write), got %d records", len(stored))
	}
	c := open(t, p)
	for _, cp := range []*checkpoint.Checkpoint{cps[0], cps[1], cps[2], c3, c4} {
		got, err := c.Get(ctx, "t", cp.ID)
		if err != nil {
			t.Fatalf("get %s: %v", cp.ID, err)
		}
		if string(got.State) != string(cp.State) {
			t.Errorf("seq %d: state %q, want %q", cp.Seq, got.State, cp.State)
		}
	}
}

// TestPutRacesDelete puts a child of the head while the thread is being
// deleted: whichever wins, the thread is left empty.
func TestPutRacesDelete(t *testing.T) {
	p := newPrefix(t)
	a, b := open(t, p), open(t, p)
	ctx := t.Context()
	for i := range 30 {
		thread := fmt.Sprintf("race-%d", i)
		cps := chainOf(t, a, thread, 3)
		child := checkpoint.Next(thread, cps[2], checkpoint.SourceStep)
		child.State = []byte(`{"child":true}`)
		var putErr, delErr error
		var wg sync.WaitGroup
		wg.Go(func() { putErr = a.Put(ctx, child) })
		wg.Go(func() { delErr = b.DeleteThread(ctx, thread) })
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: delete: %v", i, delErr)
		}
		if putErr != nil && !errors.Is(putErr, checkpoint.ErrConflict) {
			t.Fatalf("round %d: put: %v", i, putErr)
		}
		got, err := b.List(ctx, thread, 0)
		if err != nil {
			t.Fatalf("round %d: list after the race: %v", i, err)
		}
		if len(got) != 0 {
			t.Fatalf("round %d: %d checkpoints left after delete, want none", i, len(got))
		}
	}
}

// BenchmarkPut puts checkpoints in sequence on one thread, each with a
// small state that changes a little, as a graph step does.
func BenchmarkPut(b *testing.B) {
	savertest.BenchPut(b, open(b, newPrefix(b)))
}

// BenchmarkGetHead reads the head of a thread whose head is a few deltas
// past a full state.
func BenchmarkGetHead(b *testing.B) {
	savertest.BenchGetHead(b, open(b, newPrefix(b)))
}
