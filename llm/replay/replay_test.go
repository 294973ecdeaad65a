package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/llm/replay"
)

var (
	question = []llm.Message{llm.System("You plan trips."), llm.User("Weather in Paris?")}
	weather  = llm.Tool{Name: "weather", Description: "Weather in a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	call     = llm.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}
	followUp = append(append([]llm.Message(nil), question...),
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
		llm.ToolResult("c1", "sunny, 21C"))
)

// session is what an agent does: a tool call, streamed, then an answer.
func session(ctx context.Context, m llm.Model) (first []llm.Chunk, second *llm.Response, err error) {
	for c, err := range m.Stream(ctx, question, llm.WithTools(weather), llm.WithTemperature(0.2)) {
		if err != nil {
			return nil, nil, err
		}
		first = append(first, c)
	}
	second, err = m.Generate(ctx, followUp, llm.WithTools(weather), llm.WithTemperature(0.2))
	return first, second, err
}

func live(t *testing.T, replies ...llmtest.Reply) (*llmtest.Server, llm.Model) {
	t.Helper()
	srv := llmtest.New(t, replies...)
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return srv, m
}

func record(t *testing.T, m llm.Model, path string) {
	t.Helper()
	rec, err := replay.Record(m, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, _, err := session(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

func TestRecordAndReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	srv, m := live(t,
		llmtest.Reply{Reasoning: "I need the weather tool.", ToolCalls: []llm.ToolCall{call}, ChunkSize: 4},
		llmtest.Text("It is sunny in Paris."))
	rec, err := replay.Record(m, path)
	if err != nil {
		t.Fatal(err)
	}
	liveFirst, liveSecond, err := session(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close() // from here on, nothing may reach the network

	player, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	first, second, err := session(t.Context(), player)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !reflect.DeepEqual(first, liveFirst) {
		t.Errorf("replayed chunks\n got %+v\nwant %+v", first, liveFirst)
	}
	if len(first) < 3 {
		t.Errorf("replayed %d chunks, want the stream's pieces", len(first))
	}
	if !reflect.DeepEqual(second, liveSecond) || second.Message.Content != "It is sunny in Paris." {
		t.Errorf("replayed response\n got %+v\nwant %+v", second, liveSecond)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2 (all while recording)", n)
	}
	if player.Remaining() != 0 {
		t.Errorf("Remaining = %d, want 0", player.Remaining())
	}
}

func TestMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	_, m := live(t, llmtest.ToolCalls(call), llmtest.Text("sunny"))
	record(t, m, path)

	edited := func(edit func([]llm.Message)) []llm.Message {
		msgs := make([]llm.Message, len(followUp))
		copy(msgs, followUp)
		edit(msgs)
		return msgs
	}
	tests := []struct {
		name     string
		msgs     []llm.Message
		opts     []llm.Option
		path     string
		recorded string
	}{
		{"content", edited(func(m []llm.Message) { m[3] = llm.ToolResult("c1", "rainy") }), []llm.Option{llm.WithTools(weather), llm.WithTemperature(0.2)},
			"messages[3].content", `"sunny, 21C"`},
		{"option", followUp, []llm.Option{llm.WithTools(weather), llm.WithTemperature(0.7)},
			"options.temperature", "0.2"},
		{"missing option", followUp, []llm.Option{llm.WithTemperature(0.2)},
			"options.tools", ""},
		{"extra message", append(edited(func([]llm.Message) {}), llm.User("and tomorrow?")), []llm.Option{llm.WithTools(weather), llm.WithTemperature(0.2)},
			"messages", "4 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			player, err := replay.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			// The first request matches; the second (index 1) differs.
			if _, err := llm.Collect(player.Stream(t.Context(), question, llm.WithTools(weather), llm.WithTemperature(0.2))); err != nil {
				t.Fatalf("request 0: %v", err)
			}
			_, err = player.Generate(t.Context(), tt.msgs, tt.opts...)
			var mm *replay.MismatchError
			if !errors.As(err, &mm) || !errors.Is(err, replay.ErrMismatch) {
				t.Fatalf("err = %v, want a MismatchError", err)
			}
			if mm.Index != 1 || mm.Path != tt.path {
				t.Errorf("mismatch at request %d path %q, want 1 and %q", mm.Index, mm.Path, tt.path)
			}
			if tt.recorded != "" && mm.Recorded != tt.recorded {
				t.Errorf("recorded = %s, want %s", mm.Recorded, tt.recorded)
			}
			if !strings.Contains(err.Error(), "request 1") || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("message %q does not name the request and field", err)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	player := replay.NewPlayer(replay.Exchange{Messages: question, Response: &llm.Response{Message: llm.Assistant("hi")}})
	if _, err := player.Generate(t.Context(), question); err != nil {
		t.Fatal(err)
	}
	if _, err := player.Generate(t.Context(), question); !errors.Is(err, replay.ErrExhausted) || !strings.Contains(err.Error(), "request 1") {
		t.Errorf("err = %v, want ErrExhausted at request 1", err)
	}
}

func TestCrossMode(t *testing.T) {
	whole := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: "sunny", Reasoning: "look it up", ToolCalls: []llm.ToolCall{call}},
		FinishReason: llm.FinishToolCalls,
		Usage:        llm.Usage{PromptTokens: 5, CompletionTokens: 3, TotalTokens: 8},
	}
	streamed := llm.Chunks(whole)
	player := replay.NewPlayer(
		replay.Exchange{Messages: question, Response: whole},
		replay.Exchange{Messages: question, Stream: true, Chunks: streamed},
	)
	var got []llm.Chunk
	for c, err := range player.Stream(t.Context(), question) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if !reflect.DeepEqual(got, streamed) {
		t.Errorf("whole exchange streamed as %+v, want %+v", got, streamed)
	}
	resp, err := player.Generate(t.Context(), question)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(resp, whole) {
		t.Errorf("streamed exchange generated as %+v, want %+v", resp, whole)
	}
}

func TestStoppedStream(t *testing.T) {
	var buf bytes.Buffer
	_, m := live(t, llmtest.Reply{Content: "a long answer", ChunkSize: 2})
	rec := replay.NewRecorder(m, &buf)
	for _, err := range rec.Stream(t.Context(), question) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	player, err := replay.Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var streamErr error
	for _, err := range player.Stream(t.Context(), question) {
		if err != nil {
			streamErr = err
			break
		}
		n++
	}
	if n != 1 || !errors.Is(streamErr, llm.ErrTruncated) {
		t.Errorf("replayed %d chunks then %v; want 1 then ErrTruncated", n, streamErr)
	}
}

func TestFailedCallsAreNotRecorded(t *testing.T) {
	var buf bytes.Buffer
	_, m := live(t, llmtest.Reply{Fault: llmtest.FaultStatus, Status: 400}, llmtest.Text("ok"))
	rec := replay.NewRecorder(m, &buf)
	if _, err := rec.Generate(t.Context(), question); err == nil {
		t.Fatal("want the 400 passed on")
	}
	if buf.Len() != 0 {
		t.Errorf("failed call recorded: %s", buf.String())
	}
	if _, err := rec.Generate(t.Context(), question); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1 {
		t.Errorf("recorded %d lines, want 1", lines)
	}
}

func TestLoadBadFile(t *testing.T) {
	_, err := replay.Load(strings.NewReader(`{"messages":[]}` + "\n" + `{"messages": [`))
	if err == nil || !strings.Contains(err.Error(), "exchange 1") {
		t.Errorf("err = %v, want it to name exchange 1", err)
	}
}
