package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// chatTurn is what a test reads of a chat completion.
type chatTurn struct {
	status  int
	Status  string `json:"status"`
	RunID   string `json:"run_id"`
	Content string
	Ext     []struct {
		Kind        string `json:"kind"`
		InterruptID string `json:"interrupt_id"`
	} `json:"ext"`
}

func chatOn(t *testing.T, url, model, thread, text string) chatTurn {
	t.Helper()
	st, b := call(t, "POST", url+"/v1/chat/completions", "", map[string]any{
		"model": model, "thread_id": thread, "messages": []map[string]string{{"role": "user", "content": text}}})
	var out struct {
		chatTurn
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("chat %q on %s: %d %s", text, thread, st, b)
	}
	out.status, out.Content = st, out.Choices[0].Message.Content
	return out.chatTurn
}

// threadNow is a thread's status, pending interrupt, runs and values.
type threadNow struct {
	status, interrupt string
	runs              int
	doc               demo.Doc
}

func threadState(t *testing.T, url, thread string) threadNow {
	t.Helper()
	var th struct {
		Status     string                       `json:"status"`
		Interrupts map[string][]json.RawMessage `json:"interrupts"`
		Values     demo.Doc                     `json:"values"`
	}
	if st, b := call(t, "GET", url+"/threads/"+thread, "", nil); st != 200 || json.Unmarshal(b, &th) != nil {
		t.Fatalf("thread %s: %d %s", thread, st, b)
	}
	now := threadNow{status: th.Status, doc: th.Values}
	for _, is := range th.Interrupts {
		for _, raw := range is {
			var i struct {
				ID string `json:"id"`
			}
			json.Unmarshal(raw, &i)
			now.interrupt = i.ID
		}
	}
	st, b := call(t, "GET", url+"/threads/"+thread+"/runs?limit=100", "", nil)
	var runs []json.RawMessage
	if st != 200 || json.Unmarshal(b, &runs) != nil {
		t.Fatalf("runs of %s: %d %s", thread, st, b)
	}
	now.runs = len(runs)
	return now
}

// consentServer serves the demo, and the demo asking in Chinese as
// "demo-zh", on a loopback port.
func consentServer(t *testing.T) string {
	var r server.Registry
	build := server.Compile(demo.Graph())
	title := func(text string) (json.RawMessage, error) { return json.Marshal(map[string]string{"title": text}) }
	for _, a := range []server.Agent{
		{Name: "demo", Build: build, FromChat: title},
		{Name: "demo-zh", Build: build, FromChat: title, Reply: func(state json.RawMessage, pending *checkpoint.Interrupt) string {
			var d demo.Doc
			json.Unmarshal(state, &d)
			if pending != nil {
				return fmt.Sprintf("清单「%s」共 %d 项，确认吗？", d.Title, len(d.Items))
			}
			return fmt.Sprintf("approved=%v", d.Approved)
		}},
	} {
		if err := r.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &r, Database: filepath.Join(t.TempDir(), "loom.db"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}

// Replies of the labelled corpus sent through /v1/chat/completions to
// the demo's question: a yes resumes and approves, a no resumes and
// rejects, an unclear reply gets a 200 that asks again, starts no run and
// leaves the question pending, and the next "yes" answers that question.
func TestChatConsent(t *testing.T) {
	url := consentServer(t)
	f, err := os.Open("../intent/testdata/consent.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	named := map[string]bool{"好像不对": true, "行不通": true, "go away": true, "ok no": true, "可以吗？": true, "是不是搞错了": true,
		"对不起，我不同意": true, "没问题": true, "嗯": true, "确定": true, "执行吧": true, "yep": true, "sounds good": true}
	var sample [][3]string
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); {
		cols := strings.SplitN(sc.Text(), "\t", 3)
		if len(cols) != 3 || strings.HasPrefix(cols[0], "#") || json.Valid([]byte(cols[2])) {
			continue // JSON is the value itself, not a reply to read
		}
		if n++; n%5 == 0 || named[cols[2]] {
			sample = append(sample, [3]string(cols))
		}
	}
	if len(sample) < 60 {
		t.Fatalf("a sample of %d replies", len(sample))
	}
	got := map[intent.Consent]int{}
	for i, c := range sample {
		kind, reply := c[0], c[2]
		thread := fmt.Sprintf("consent-%d", i)
		if first := chatOn(t, url, "demo", thread, "launch"); first.status != 200 || first.Status != "interrupted" {
			t.Fatalf("first turn: %+v", first)
		}
		asked := threadState(t, url, thread)
		turn := chatOn(t, url, "demo", thread, reply)
		now := threadState(t, url, thread)
		want := intent.ReadConsent(reply).Consent
		got[want]++
		switch {
		case turn.status != 200:
			t.Errorf("%s %q: %d %+v", kind, reply, turn.status, turn)
		case want == intent.Unclear:
			if turn.Status != "interrupted" || turn.RunID != "" || !strings.Contains(turn.Content, "yes or a no") || len(turn.Ext) != 1 || turn.Ext[0].InterruptID != asked.interrupt ||
				now.status != "interrupted" || now.interrupt != asked.interrupt || now.runs != asked.runs {
				t.Errorf("%s %q (unclear): %+v, thread %+v; want the question asked again and pending, as %+v", kind, reply, turn, now, asked)
			}
			if yes := chatOn(t, url, "demo", thread, "yes"); yes.Status != "done" {
				t.Errorf("yes after %q: %+v", reply, yes)
			} else if now := threadState(t, url, thread); !now.doc.Approved || now.doc.Title != "launch" || now.runs != 2 {
				t.Errorf("yes after %q: %+v, want the launch checklist approved by a second run", reply, now)
			}
		case turn.Status != "done" || turn.RunID == "" || now.status != "idle" || now.interrupt != "" || now.doc.Approved != (want == intent.Accepted):
			t.Errorf("%s %q (%s): %+v, thread %+v", kind, reply, want, turn, now)
		}
		if want == intent.Accepted && kind != "yes" {
			t.Errorf("%s %q accepted", kind, reply)
		}
	}
	t.Logf("%d replies: %d accepted, %d rejected, %d asked again", len(sample), got[intent.Accepted], got[intent.Rejected], got[intent.Unclear])
	if got[intent.Accepted] == 0 || got[intent.Rejected] == 0 || got[intent.Unclear] == 0 {
		t.Errorf("the sample lacks a kind of verdict: %v", got)
	}
}

// A reply of the wrong shape ([1,2] to a question that wants an object)
// gets a 200 that asks again, in the language of the question; the next
// "yes" resumes the original question, not a new checklist called "yes".
// Streamed, the question comes again as chunks.
func TestChatAsksAgain(t *testing.T) {
	url := consentServer(t)
	chatOn(t, url, "demo", "shape", "launch")
	asked := threadState(t, url, "shape")
	turn := chatOn(t, url, "demo", "shape", "[1,2]")
	if turn.status != 200 || turn.Status != "interrupted" || turn.RunID != "" || !strings.Contains(turn.Content, "doesn't answer the question") ||
		!strings.Contains(turn.Content, `Checklist "launch"`) {
		t.Fatalf("[1,2]: %+v", turn)
	}
	if now := threadState(t, url, "shape"); now.status != "interrupted" || now.interrupt != asked.interrupt || now.runs != asked.runs {
		t.Fatalf("after [1,2]: %+v, want %+v", now, asked)
	}
	if yes := chatOn(t, url, "demo", "shape", "yes"); yes.Status != "done" {
		t.Fatalf("yes: %+v", yes)
	}
	if now := threadState(t, url, "shape"); !now.doc.Approved || now.doc.Title != "launch" || now.runs != 2 {
		t.Fatalf("after yes: %+v", now)
	}

	chatOn(t, url, "demo-zh", "zh", "发布")
	for reply, lead := range map[string]string{"可以吗？": "您是同意还是不同意", "[1,2]": "这个回答对不上问题"} {
		turn := chatOn(t, url, "demo-zh", "zh", reply)
		if turn.status != 200 || turn.Status != "interrupted" || !strings.Contains(turn.Content, lead) || !strings.Contains(turn.Content, "清单「发布」") {
			t.Errorf("%q to demo-zh: %+v", reply, turn)
		}
	}

	st, b := call(t, "POST", url+"/v1/chat/completions", "", map[string]any{"model": "demo-zh", "thread_id": "zh", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "好像可以"}}})
	if s := string(b); st != 200 || !strings.Contains(s, "您是同意还是不同意") || !strings.Contains(s, `"finish_reason":"stop"`) ||
		!strings.Contains(s, `"status":"interrupted"`) || !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Errorf("streamed: %d %s", st, b)
	}
	if now := threadState(t, url, "zh"); now.status != "interrupted" || now.runs != 1 {
		t.Errorf("demo-zh after three replies that answer nothing: %+v", now)
	}
}
