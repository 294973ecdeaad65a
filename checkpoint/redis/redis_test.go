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
	"github.com/loomkit/loom/checkpoint/internal/stored"
	"github.com/loomkit/loom/checkpoint/savertest"
	"github.com/loomkit/loom/internal/testenv"
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
	testenv.Need(t, fmt.Sprintf("redis unreachable; set %s to a reachable server (default %s)", envURL, defaultURL), reach.err)
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

// storage is a fresh key prefix for savertest.
var storage = savertest.Storage{
	New:  func(t *testing.T) string { return newPrefix(t) },
	Open: func(t *testing.T, p string) checkpoint.Saver { return open(t, p) },
	Rows: func(t *testing.T, p, thread string) []savertest.Row {
		recs, _ := records(t, open(t, p), thread)
		out := make([]savertest.Row, len(recs))
		for i, r := range recs {
			out[i] = savertest.Row{Full: r.Full, Size: len(r.State)}
		}
		return out
	},
}

func TestStorage(t *testing.T) { savertest.RunStorage(t, storage) }

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

// records returns the parsed records of thread, by seq, and the seqs its
// full set holds.
func records(t *testing.T, s *Saver, thread string) ([]stored.Row, []string) {
	t.Helper()
	c := rawClient(t)
	k := s.keys(thread)
	raw, err := c.LRange(t.Context(), k[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]stored.Row, len(raw))
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

// TestFullSet checks that the set of full states names exactly the
// records stored whole, in a long chain that has several.
func TestFullSet(t *testing.T) {
	s := open(t, newPrefix(t))
	savertest.Appends(t, s, "long", 200)
	got, fulls := records(t, s, "long")
	var want []string
	for i, r := range got {
		if r.Full {
			want = append(want, fmt.Sprint(i))
		}
	}
	if len(want) < 3 || strings.Join(fulls, ",") != strings.Join(want, ",") {
		t.Errorf("full set %q, full records %q; want the same, at least 3", fulls, want)
	}
}

// TestCorruptRecords breaks stored records.
func TestCorruptRecords(t *testing.T) {
	c := rawClient(t)
	// log is the key of thread's list of records under prefix p.
	log := func(t *testing.T, p, thread string) string { return open(t, p).keys(thread)[0] }
	// rewrite re-encodes the record at seq with change applied.
	rewrite := func(seq int64, change func(rw *stored.Row)) func(t *testing.T, p, thread string) {
		return func(t *testing.T, p, thread string) {
			k := log(t, p, thread)
			raw, err := c.LIndex(t.Context(), k, seq).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			var rw stored.Row
			if err := parseRecord(raw, &rw); err != nil {
				t.Fatal(err)
			}
			change(&rw)
			rec := appendRecord(nil, &checkpoint.Checkpoint{ID: rw.ID, ParentID: rw.Parent, Seq: rw.Seq, Step: int(rw.Step)}, rw.Full, rw.Meta, rw.State)
			if err := c.LSet(t.Context(), k, seq, rec).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	savertest.RunCorruptions(t, storage, []savertest.Corruption{
		{Name: "meta not JSON", Break: rewrite(4, func(rw *stored.Row) { rw.Meta = []byte(`{"next":`) }), Bad: 4, ReadOK: []int{0, 3}},
		{Name: "meta wrong type", Break: rewrite(4, func(rw *stored.Row) { rw.Meta = []byte(`{"next":"agent"}`) }), Bad: 4, ReadOK: []int{3}},
		{Name: "delta truncated", Break: rewrite(2, func(rw *stored.Row) { rw.State = rw.State[:1] }), Bad: 2, ReadOK: []int{0, 1}},
		{Name: "delta empty", Break: rewrite(2, func(rw *stored.Row) { rw.State = nil }), Bad: 2, ReadOK: []int{1}},
		{Name: "delta past its base", Break: rewrite(2, func(rw *stored.Row) { rw.State = []byte{0xff, 0xff, 0x03, 0x00} }), Bad: 2, ReadOK: []int{1}},
		{Name: "full flag lost", Break: rewrite(0, func(rw *stored.Row) { rw.Full = false }), Bad: 0},
		{Name: "parent rewritten", Break: rewrite(3, func(rw *stored.Row) { rw.Parent = "elsewhere" }), Bad: 3, ReadOK: []int{2}},
		{Name: "seq rewritten", Break: rewrite(3, func(rw *stored.Row) { rw.Seq = 7 }), Bad: 3, ReadOK: []int{2}},
		{Name: "record missing", Break: func(t *testing.T, p, thread string) {
			// Remove seq 2: the record of seq 3 moves to index 2.
			k := log(t, p, thread)
			if err := c.LSet(t.Context(), k, 2, "gone").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.LRem(t.Context(), k, 1, "gone").Err(); err != nil {
				t.Fatal(err)
			}
		}, Bad: 3, ReadOK: []int{0, 1}},
		{Name: "record truncated", Break: func(t *testing.T, p, thread string) {
			k := log(t, p, thread)
			raw, err := c.LIndex(t.Context(), k, 2).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			// Keep the version, flags and id, cut the rest.
			n := 3 + len(raw[3:3+raw[2]])
			if err := c.LSet(t.Context(), k, 2, raw[:n+1]).Err(); err != nil {
				t.Fatal(err)
			}
		}, Bad: 2, ReadOK: []int{0, 1}},
		{Name: "record garbage", Break: func(t *testing.T, p, thread string) {
			if err := c.LSet(t.Context(), log(t, p, thread), 2, "\x07garbage").Err(); err != nil {
				t.Fatal(err)
			}
		}, Bad: -1, Names: "seq 2", ReadOK: []int{0, 1}},
	})
}

// TestDanglingID: an id whose seq is past the log is corrupt, and the
// ids next to it still read.
func TestDanglingID(t *testing.T) {
	s := open(t, newPrefix(t))
	cps := savertest.Appends(t, s, "dangling", 2)
	if err := rawClient(t).HSet(t.Context(), s.keys("dangling")[1], "ghost", 5).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "dangling", "ghost"); !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "dangling") {
		t.Errorf("get an id past the log: got %v, want ErrCorrupt naming the thread", err)
	}
	if got, err := s.Get(t.Context(), "dangling", cps[1].ID); err != nil || got.ID != cps[1].ID {
		t.Errorf("get a good id next to it: %v, %v", got, err)
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
