package schedule

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// serve runs Loom's server with the schedule agent on a loopback port.
func serve(t *testing.T, db string, keys ...string) string {
	t.Helper()
	var reg server.Registry
	if err := reg.Register(ServerAgent(ServerOptions{StreamDelay: -1, Logger: quiet})); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: db, Logger: quiet, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}

type completion struct {
	Status  string `json:"status"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Ext []struct {
		Kind string `json:"kind"`
	} `json:"ext"`
}

func (r completion) kinds() []string {
	var out []string
	for _, e := range r.Ext {
		if !slices.Contains(out, e.Kind) {
			out = append(out, e.Kind)
		}
	}
	return out
}

func postChat(t *testing.T, url, text string, stream bool) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "schedule", "thread_id": "student-1", "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": text}}})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat %q: HTTP %d", text, resp.StatusCode)
	}
	return resp
}

func chat(t *testing.T, url, text string) completion {
	t.Helper()
	resp := postChat(t, url, text, false)
	defer resp.Body.Close()
	var r completion
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("chat %q: %v %+v", text, err, r)
	}
	return r
}

// The three requests over HTTP, through /v1/chat/completions: every reply
// is the next message, the last one streamed.
func TestHTTPChat(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	url := serve(t, db)

	r := chat(t, url, "帮我安排下周的复习")
	if r.Status != "interrupted" || !strings.Contains(r.Choices[0].Message.Content, "回复「确认」开始执行") {
		t.Fatalf("request 1: %s %q, want the plan card", r.Status, r.Choices[0].Message.Content)
	}
	r = chat(t, url, "确认")
	if r.Status != "interrupted" || !strings.Contains(r.Choices[0].Message.Content, "需要你确认：按任务类策略放置 10 项") {
		t.Fatalf("request 2: %s %q, want the tool card", r.Status, r.Choices[0].Message.Content)
	}
	for _, k := range []string{"status", "tool_call", "tool_result", "reasoning_text", "confirm_request"} {
		if !slices.Contains(r.kinds(), k) {
			t.Errorf("request 2: no %s ext; got %v", k, r.kinds())
		}
	}

	resp := postChat(t, url, "确认", true)
	defer resp.Body.Close()
	var text strings.Builder
	var kinds []string
	finished := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			finished = true
			break
		}
		var chunk struct {
			Status  string `json:"status"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Ext *struct {
				Kind string `json:"kind"`
			} `json:"ext"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatalf("chunk %s: %v", line, err)
		}
		if len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
		if chunk.Ext != nil && !slices.Contains(kinds, chunk.Ext.Kind) {
			kinds = append(kinds, chunk.Ext.Kind)
		}
		if chunk.Status != "" && chunk.Status != "done" {
			t.Errorf("request 3 ended %s, want done", chunk.Status)
		}
	}
	if !finished || !strings.Contains(text.String(), "健康度 65.0 →") || !slices.Contains(kinds, "assistant_text") {
		t.Errorf("request 3 stream: finished %v, kinds %v, text %q", finished, kinds, text.String())
	}

	st := NewStore(openDB(t, db))
	s, err := st.Load(context.Background(), DefaultOwner)
	if err != nil || len(s.Pending()) != 0 {
		t.Errorf("stored schedule after the chat: %v, %d pending", err, len(s.Pending()))
	}
}

// TestOwnSchedules: with API keys each key plans on a schedule of its own,
// started from the sample; one key's commits leave the others' alone.
func TestOwnSchedules(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	url := serve(t, db, "key-a", "key-b")
	say := func(key, text string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "schedule", "thread_id": "s-" + key,
			"messages": []map[string]string{{"role": "user", "content": text}}})
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r completion
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%s %q: HTTP %d %v %+v", key, text, resp.StatusCode, err, r)
		}
		return r.Choices[0].Message.Content
	}
	for _, text := range []string{"帮我安排下周的复习", "确认", "确认"} {
		say("key-a", text)
	}
	if got := say("key-b", "帮我安排下周的复习"); !strings.Contains(got, "回复「确认」开始执行") {
		t.Fatalf("key-b's plan card: %q", got)
	}

	st := NewStore(openDB(t, db))
	rows, err := st.db.SQL().QueryContext(context.Background(), `SELECT owner, revision FROM schedule_windows ORDER BY owner`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	revisions := map[string]int64{}
	for rows.Next() {
		var owner string
		var rev int64
		if err := rows.Scan(&owner, &rev); err != nil {
			t.Fatal(err)
		}
		revisions[owner] = rev
	}
	// The sample owner, key-a (placed its 10 items) and key-b (only read).
	var changed, untouched int
	for owner, rev := range revisions {
		switch {
		case owner == DefaultOwner && rev != 0:
			t.Errorf("the default owner's schedule changed (revision %d)", rev)
		case owner == DefaultOwner:
		case rev > 0:
			changed++
		default:
			untouched++
		}
	}
	if len(revisions) != 3 || changed != 1 || untouched != 1 {
		t.Errorf("schedules by owner and revision: %v; want the default one, key-a's changed, key-b's untouched", revisions)
	}
}

// The week as data: GET /api/v1/schedule/week returns the caller's
// timetable, and the constraints endpoint reads and sets the times kept
// free (issue 24).
func TestWeekAPI(t *testing.T) {
	url := serve(t, filepath.Join(t.TempDir(), "loom.db"))
	for _, text := range []string{"帮我安排下周的复习，周三晚上我要打工，不要排", "确认", "确认"} {
		resp := postChat(t, url, text, false)
		resp.Body.Close()
	}
	resp, err := http.Get(url + "/api/v1/schedule/week")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var week Timetable
	if err := json.NewDecoder(resp.Body).Decode(&week); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET week: HTTP %d %v", resp.StatusCode, err)
	}
	if len(week.Days) != 7 || len(week.Pending) != 0 || week.Revision != 1 {
		t.Fatalf("week has %d days, %d pending, revision %d; want 7, 0, 1", len(week.Days), len(week.Pending), week.Revision)
	}
	tasks, courses := 0, 0
	for _, d := range week.Days {
		for i, e := range d.Entries {
			if i > 0 && e.From < d.Entries[i-1].From {
				t.Errorf("%s: entries out of order", d.Name)
			}
			switch e.Kind {
			case entryTask:
				tasks++
				if d.DayOfWeek == 3 && e.To >= 9 {
					t.Errorf("%s on Wednesday evening", e.Name)
				}
			case entryCourse:
				courses++
			}
		}
	}
	// The page draws Days × Slots: each entry's time runs from its first
	// slot's start to its last slot's end, and two entries share a slot
	// only when a task sits in a course that lets it (in).
	if len(week.Slots) != SlotsPerDay || week.Slots[0] != (Slot{Slot: 1, Time: "08:00-08:45"}) {
		t.Fatalf("slots %+v, want %d from 08:00-08:45", week.Slots, SlotsPerDay)
	}
	for _, d := range week.Days {
		for i, e := range d.Entries {
			if e.From < 1 || e.To > len(week.Slots) || e.Time != week.Slots[e.From-1].Time[:5]+week.Slots[e.To-1].Time[5:] {
				t.Errorf("%s %s: slots %d-%d at %s, not on the grid", d.Name, e.Name, e.From, e.To, e.Time)
				continue
			}
			for _, o := range d.Entries[:i] {
				if o.From > e.To || e.From > o.To {
					continue
				}
				if !(o.Kind == entryCourse && o.CanEmbed && e.Kind == entryTask && e.In == o.ID) &&
					!(e.Kind == entryCourse && e.CanEmbed && o.Kind == entryTask && o.In == e.ID) {
					t.Errorf("%s: %s and %s share a slot, not a task in a course that lets it", d.Name, o.Name, e.Name)
				}
			}
		}
	}
	if tasks != 10 || courses != 11 {
		t.Errorf("%d tasks and %d courses in the week, want 10 and 11", tasks, courses)
	}
	if week.AvoidText != "周三晚上" || len(week.Avoid) != 1 {
		t.Errorf("avoid %v %q, want Wednesday evening", week.Avoid, week.AvoidText)
	}
	mon := week.Days[0].Entries[0]
	if mon.Name != "高等数学" || mon.From != 1 || mon.To != 2 || mon.Time != "08:00-09:40" || !mon.Locked {
		t.Errorf("Monday's first entry is %+v", mon)
	}

	put := func(body string) (int, string) {
		req, _ := http.NewRequest("PUT", url+"/api/v1/schedule/constraints", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := put(`{"avoid":[{"day_of_week":7},{"day_of_week":5,"from_slot":9,"to_slot":12}]}`); code != 200 || !strings.Contains(body, "周五晚上、周日全天") {
		t.Errorf("PUT constraints: %d %s", code, body)
	}
	if code, body := put(`{"avoid":[{"day_of_week":9}]}`); code != 400 || !strings.Contains(body, "day_of_week 9") {
		t.Errorf("PUT a bad day: %d %s", code, body)
	}
	many := `{"avoid":[` + strings.Repeat(`{"day_of_week":1},`, 1000) + `{"day_of_week":2}]}`
	for _, bad := range []string{`{"avoid":`, `{"avoid":[{"day_of_week":1}],"drop":true}`, `[1,2]`, many} {
		if code, body := put(bad); code != 400 {
			t.Errorf("PUT %.40q: %d %s, want 400", bad, code, body)
		}
	}
	resp2 := postChat(t, url, "帮我安排下周的复习", false)
	defer resp2.Body.Close()
	var c completion
	if err := json.NewDecoder(resp2.Body).Decode(&c); err != nil || len(c.Choices) != 1 || !strings.Contains(c.Choices[0].Message.Content, "周五晚上、周日全天 不排任务") {
		t.Errorf("the next plan card does not use the constraints set by PUT: %+v %v", c, err)
	}
}
