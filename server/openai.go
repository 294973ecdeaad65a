package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
)

// This file serves the OpenAI chat completions API: every agent is a model.
//
// A chat names its thread with the X-Loom-Thread header, or the body's
// "thread_id" or "user" field; a thread that does not exist is created.
// Without any of them the chat continues the thread of the same key whose
// recorded conversation is the messages sent before the last user one
// (see continuedThread in chatconv.go), or a copy of a thread forked at
// the reply where they go another way; else a new thread is made. The response names the
// thread in the X-Loom-Thread header and the "thread_id" field. The last
// user message is the turn: on a thread that waits for a person it
// answers the pending question (see Agent.Answer and DefaultAnswer), else
// it starts a new run with the agent's input for it (Agent.FromChat). A
// reply that does not answer the question (unclear, refused by
// Agent.Answer, or not of the shape the question asks for) gets the
// question again: 200, status interrupted, no run started.
//
// Streamed chunks are chat.completion.chunk objects that may carry an
// "ext" object with Loom's events: kind reasoning_text, assistant_text,
// status, tool_call, tool_result, confirm_request, interrupt, answer (how
// the reply was read: the value that resumes the question, first in a
// turn that answers one), error or the agent's own kind; display_mode
// append (add text to the block), replace (replace the block) or card
// (show data as a card); block_id naming the block; and the node, step,
// text, data and interrupt id. The stream ends with "data: [DONE]".

func (s *Server) openAIRoutes(m *http.ServeMux) {
	m.Handle("GET /v1/models", s.api(s.listModels))
	m.Handle("GET /v1/models/{model}", s.api(s.getModel))
	m.Handle("POST /v1/chat/completions", s.api(s.chat))
}

type model struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Description string `json:"description,omitempty"`
}

func modelJSON(a *builtAgent) model {
	return model{ID: a.Name, Object: "model", Created: started.Unix(), OwnedBy: "loom", Description: a.Description}
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request, _ string) error {
	data := make([]model, 0, len(s.order))
	for _, n := range s.order {
		data = append(data, modelJSON(s.agents[n]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request, _ string) error {
	a, err := s.agent(strings.TrimPrefix(r.PathValue("model"), "loom/"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, modelJSON(a))
	return nil
}

type chatRequest struct {
	Model         string          `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User     string `json:"user"`
	ThreadID string `json:"thread_id"`
	// Config (only its configurable) and Context set the agent's
	// configuration for the run the message starts or resumes, as on a
	// LangGraph run (see config.go): the web page sends its language as
	// the locale, so a typed answer is answered in it. OpenAI clients
	// send them as extra body fields.
	Config  json.RawMessage `json:"config"`
	Context json.RawMessage `json:"context"`
}

// ext is a Loom event in a chat completion chunk.
type ext struct {
	Kind        string          `json:"kind"`
	DisplayMode string          `json:"display_mode"`
	BlockID     string          `json:"block_id"`
	Node        string          `json:"node,omitempty"`
	Step        int             `json:"step,omitempty"`
	Text        string          `json:"text,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	InterruptID string          `json:"interrupt_id,omitempty"`
}

// Ext kinds and display modes.
const (
	extReasoning = "reasoning_text"
	extAssistant = "assistant_text"
	extStatus    = "status"
	extToolCall  = "tool_call"
	extToolRes   = "tool_result"
	extConfirm   = "confirm_request"
	extInterrupt = "interrupt"
	extAnswer    = "answer"
	extError     = "error"

	displayAppend  = "append"
	displayReplace = "replace"
	displayCard    = "card"
)

// chatTurn follows one run for a chat: what each event adds to the
// answer and which ext it carries.
type chatTurn struct {
	a        *builtAgent
	answer   *ext // how the reply was read, when it answers a question
	streamed bool // model output was streamed as the answer
	text     strings.Builder
	reason   strings.Builder
	exts     []ext
}

// step returns what event e adds: content, reasoning and an ext (nil for
// events a chat does not show).
func (c *chatTurn) step(e *event) (content, reasoning string, x *ext) {
	block := e.Node + ":" + itoa(e.Step)
	var text string
	switch e.Kind {
	case graph.KindToken:
		_ = json.Unmarshal(e.Data, &text)
		c.streamed = true
		return text, "", &ext{Kind: extAssistant, DisplayMode: displayAppend, BlockID: block + ":text", Node: e.Node, Step: e.Step, Text: text}
	case graph.KindReasoning:
		_ = json.Unmarshal(e.Data, &text)
		return "", text, &ext{Kind: extReasoning, DisplayMode: displayAppend, BlockID: block + ":reasoning", Node: e.Node, Step: e.Step, Text: text}
	case graph.KindStatus:
		_ = json.Unmarshal(e.Data, &text)
		return "", "", &ext{Kind: extStatus, DisplayMode: displayReplace, BlockID: "status", Node: e.Node, Step: e.Step, Text: text, Data: e.Data}
	case graph.KindToolCall, graph.KindToolResult:
		kind := extToolCall
		if e.Kind == graph.KindToolResult {
			kind = extToolRes
		}
		return "", "", &ext{Kind: kind, DisplayMode: displayCard, BlockID: block + ":" + kind + ":" + itoa(e.Seq), Node: e.Node, Step: e.Step, Data: e.Data}
	case graph.KindInterrupt:
		return "", "", &ext{Kind: extConfirm, DisplayMode: displayCard, BlockID: "confirm:" + e.Interrupt.ID, Node: e.Node, Step: e.Step,
			Data: e.Interrupt.Payload, InterruptID: e.Interrupt.ID}
	case graph.KindRunEnd:
		reply := c.a.reply(e.Data, e.Interrupt)
		if c.streamed {
			if e.Interrupt == nil {
				return "", "", nil
			}
			reply = "\n\n" + reply
		}
		if e.Interrupt != nil {
			return reply, "", &ext{Kind: extInterrupt, DisplayMode: displayCard, BlockID: "interrupt:" + e.Interrupt.ID, Node: e.Interrupt.Node,
				Text: strings.TrimSpace(reply), Data: e.Interrupt.Payload, InterruptID: e.Interrupt.ID}
		}
		return reply, "", &ext{Kind: extAssistant, DisplayMode: displayAppend, BlockID: "reply", Text: reply}
	case graph.KindError:
		return "", "", &ext{Kind: extError, DisplayMode: displayCard, BlockID: "error", Text: e.Err}
	case graph.KindRunStart, graph.KindNodeStart, graph.KindNodeEnd, graph.KindState:
		return "", "", nil
	}
	return "", "", &ext{Kind: string(e.Kind), DisplayMode: displayCard, BlockID: block + ":" + string(e.Kind) + ":" + itoa(e.Seq), Node: e.Node, Step: e.Step, Data: e.Data}
}

type chatDelta struct {
	Role             string `json:"role,omitempty"`
	Content          string `json:"content,omitempty"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Message      *chatDelta `json:"message,omitempty"`
	FinishReason *string    `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatResponse struct {
	ID       string       `json:"id"`
	Object   string       `json:"object"`
	Created  int64        `json:"created"`
	Model    string       `json:"model"`
	Choices  []chatChoice `json:"choices"`
	Usage    *chatUsage   `json:"usage,omitempty"`
	ThreadID string       `json:"thread_id"`
	RunID    string       `json:"run_id"`
	// Status is done or interrupted (waiting for the next message).
	Status string `json:"status,omitempty"`
	Ext    any    `json:"ext,omitempty"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, owner string) error {
	var req chatRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	a, err := s.agent(strings.TrimPrefix(req.Model, "loom/"))
	if err != nil {
		return err
	}
	config, err := (&runRequest{Config: req.Config, Context: req.Context}).config(a, nil)
	if err != nil {
		return err
	}
	msgs, err := parseChatMessages(req.Messages)
	if err != nil {
		return errorf(http.StatusBadRequest, "invalid_messages", "%v", err)
	}
	last := lastHuman(msgs)
	if last < 0 {
		return errorf(http.StatusBadRequest, "invalid_messages", "messages: no user message")
	}
	text := msgs[last].Text
	ctx := r.Context()
	tid := r.Header.Get("X-Loom-Thread")
	if tid == "" {
		tid = req.ThreadID
	}
	if tid == "" {
		tid = req.User
	}
	var t *Thread
	if tid != "" {
		if err := checkThreadID(tid); err != nil {
			return err
		}
		t, err = s.records.thread(ctx, threadKey(owner, tid))
		switch {
		case errors.Is(err, ErrNotFound):
			t = nil
		case err != nil:
			return err
		case t.Owner != owner:
			return errorf(http.StatusNotFound, "not_found", "thread %s not found", tid)
		case t.Agent != "" && t.Agent != a.Name:
			return errorf(http.StatusConflict, "wrong_agent", "thread %s holds runs of agent %s, not %s", tid, t.Agent, a.Name)
		}
	} else if t, err = s.continuedThread(ctx, owner, a, msgs[:last]); err != nil {
		return err
	}
	if t != nil {
		if err := s.settleReply(ctx, a, t); err != nil {
			return err
		}
	}
	in, head, state, unanswered, err := s.chatInput(ctx, a, t, text)
	if err != nil {
		return err
	}
	if unanswered != nil {
		asked := s.askAgain(w, r, req, a, t.ID, head, a.reply(state, head), text, configLocale(config), unanswered)
		if err := s.records.appendMessages(context.WithoutCancel(ctx), t.ID, owner, false,
			chatMessage{Role: roleHuman, Text: text, ID: msgs[last].ID}, chatMessage{Role: roleAI, Text: asked}); err != nil {
			s.log.WarnContext(ctx, "chat message not recorded", "thread", t.ID, "err", err)
		}
		return nil
	}
	if err := s.admitRun(ctx, owner, t, strategyReject, in, nil); err != nil {
		return err
	}
	if t == nil {
		if t, err = s.newThread(ctx, tid, owner, agentMetadata(nil, a.Name)); err != nil {
			return err
		}
	}
	run := s.newRun(t.ID, a.Name, owner, strategyReject, nil, in)
	run.user, run.config = userOf(ctx), config
	if err := s.exec.submit(ctx, run); err != nil {
		return err
	}
	if err := s.records.appendMessages(ctx, t.ID, owner, false, chatMessage{Role: roleHuman, Text: text, ID: msgs[last].ID}); err != nil {
		s.log.WarnContext(ctx, "chat message not recorded", "thread", t.ID, "err", err)
	}
	w.Header().Set("X-Loom-Thread", publicID(t.ID))
	w.Header().Set("X-Loom-Run", run.id)
	resp := chatResponse{ID: "chatcmpl-" + run.id, Created: time.Now().Unix(), Model: a.Name, ThreadID: publicID(t.ID), RunID: run.id}
	turn := &chatTurn{a: a}
	if head != nil {
		turn.answer = &ext{Kind: extAnswer, DisplayMode: displayCard, BlockID: "answer:" + head.ID, Node: head.Node, Data: in.Resume, InterruptID: head.ID}
		turn.exts = append(turn.exts, *turn.answer)
	}
	if req.Stream {
		s.streamChat(ctx, w, r, run, resp, turn, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return nil
	}
	var failed *event
	err = s.follow(ctx, run.feed, 0, func(e *event) error {
		content, reasoning, x := turn.step(e)
		turn.text.WriteString(content)
		turn.reason.WriteString(reasoning)
		if x != nil {
			turn.exts = append(turn.exts, *x)
		}
		if e.Kind == graph.KindError {
			failed = e
		}
		if e.Kind == graph.KindRunEnd {
			resp.Status = string(e.Status)
		}
		return nil
	}, nil, nil)
	if err != nil {
		if ctx.Err() == nil {
			return fmt.Errorf("follow run %s: %w", run.id, err)
		}
		return nil // the client went away; the run goes on
	}
	if failed != nil {
		status := http.StatusInternalServerError
		switch failed.ErrCode {
		case "no_interrupt", "cancelled", "stopped", "graph_version": // answered meanwhile, stopped by someone, or stored by another version of the agent
			status = http.StatusConflict
		case "invalid_answer":
			status = http.StatusUnprocessableEntity
		}
		return errorf(status, failed.ErrCode, "run %s on thread %s: %s", run.id, publicID(t.ID), failed.Err)
	}
	s.recordReply(ctx, run, turn.text.String())
	stop := "stop"
	resp.Object = "chat.completion"
	resp.Choices = []chatChoice{{Message: &chatDelta{Role: "assistant", Content: turn.text.String(), ReasoningContent: turn.reason.String()}, FinishReason: &stop}}
	resp.Usage = &chatUsage{}
	resp.Ext = orEmpty(turn.exts)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// askAgain answers a chat reply that does not answer the pending question
// — neither a yes nor a no (intent.ErrUnclear), refused by the agent's
// Answer, or not of the shape the question asks for — by asking it again:
// 200, no run started, the question still pending. The text is in the
// language of locale ("zh-CN", "en", …) when the request set one, else
// the one the question is asked in, Chinese or English; askAgain returns
// it.
func (s *Server) askAgain(w http.ResponseWriter, r *http.Request, req chatRequest, a *builtAgent, thread string, pending *checkpoint.Interrupt, asked, reply, locale string, why error) string {
	s.log.DebugContext(r.Context(), "chat reply does not answer the question; asking again", "thread", thread, "node", pending.Node, "err", why)
	q := question(asked)
	zh := speaksChinese(q)
	switch {
	case locale != "":
		zh = strings.HasPrefix(strings.ToLower(locale), "zh")
	case !hasLetters(q):
		zh = speaksChinese(reply)
	}
	var lead string
	switch unclear := errors.Is(why, intent.ErrUnclear); {
	case zh && unclear:
		lead = "不好意思，没听明白您是同意还是不同意。"
	case zh:
		lead = "这个回答对不上问题，请再回答一次。"
	case unclear:
		lead = "Sorry, is that a yes or a no?"
	default:
		lead = "That reply doesn't answer the question; please answer again."
	}
	text := lead + "\n" + q
	x := ext{Kind: extInterrupt, DisplayMode: displayCard, BlockID: "interrupt:" + pending.ID, Node: pending.Node,
		Text: text, Data: pending.Payload, InterruptID: pending.ID}
	w.Header().Set("X-Loom-Thread", publicID(thread))
	resp := chatResponse{ID: "chatcmpl-" + checkpoint.NewID(), Created: time.Now().Unix(), Model: a.Name, ThreadID: publicID(thread), Status: string(graph.StatusInterrupted)}
	stop := "stop"
	if !req.Stream {
		resp.Object = "chat.completion"
		resp.Choices = []chatChoice{{Message: &chatDelta{Role: "assistant", Content: text}, FinishReason: &stop}}
		resp.Usage, resp.Ext = &chatUsage{}, []ext{x}
		writeJSON(w, http.StatusOK, resp)
		return text
	}
	sw := startStream(w, r, nil, `{"object":"heartbeat"}`)
	resp.Object = "chat.completion.chunk"
	chunk := func(d chatDelta, finish *string, x any, usage *chatUsage) error {
		c := resp
		c.Choices, c.Ext, c.Usage = []chatChoice{{Delta: &d, FinishReason: finish}}, x, usage
		if usage != nil {
			c.Choices = []chatChoice{}
		}
		return sw.data(c)
	}
	err := errors.Join(chunk(chatDelta{Role: "assistant"}, nil, nil, nil),
		chunk(chatDelta{Content: text}, nil, &x, nil),
		chunk(chatDelta{}, &stop, nil, nil))
	if err == nil && req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		err = chunk(chatDelta{}, nil, nil, &chatUsage{})
	}
	if err == nil {
		sw.done()
		sw.flush()
	}
	return text
}

// question returns what a pending question asks, for people: the agent's
// reply for it, or, when that is JSON (an agent without Reply shows the
// payload), the payload's string or its "question", "summary", "text",
// "message" or "prompt".
func question(asked string) string {
	var str string
	if json.Unmarshal([]byte(asked), &str) == nil {
		return str
	}
	var m map[string]any
	if json.Unmarshal([]byte(asked), &m) == nil {
		for _, k := range []string{"question", "summary", "text", "message", "prompt"} {
			if v, ok := m[k].(string); ok && v != "" {
				return v
			}
		}
	}
	return asked
}

// speaksChinese reports whether text is rather Chinese than English: a
// Han character weighs as much as three Latin letters.
func speaksChinese(text string) bool {
	han, latin := 0, 0
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
		case r < 0x80 && unicode.IsLetter(r):
			latin++
		}
	}
	return han > 0 && 3*han >= latin
}

func hasLetters(text string) bool { return strings.IndexFunc(text, unicode.IsLetter) >= 0 }

// streamChat streams run as chat.completion.chunk events.
func (s *Server) streamChat(ctx context.Context, w http.ResponseWriter, r *http.Request, run *run, base chatResponse, turn *chatTurn, usage bool) {
	sw := startStream(w, r, nil, `{"object":"heartbeat"}`)
	base.Object = "chat.completion.chunk"
	chunk := func(d chatDelta, finish *string, x *ext) error {
		c := base
		c.Choices = []chatChoice{{Delta: &d, FinishReason: finish}}
		if x != nil {
			c.Ext = x
		}
		return sw.data(c)
	}
	if chunk(chatDelta{Role: "assistant"}, nil, turn.answer) != nil {
		return
	}
	var said strings.Builder
	err := s.pump(ctx, sw, run.feed, 0, func(e *event) error {
		content, reasoning, x := turn.step(e)
		said.WriteString(content)
		if e.Kind == graph.KindRunEnd {
			s.recordReply(ctx, run, said.String())
		}
		if e.Kind == graph.KindError {
			return sw.data(map[string]any{"error": errorDetail{Code: e.ErrCode, Message: e.Err}, "ext": x, "thread_id": publicID(run.thread), "run_id": run.id})
		}
		if x == nil && content == "" && reasoning == "" {
			return nil
		}
		if err := chunk(chatDelta{Content: content, ReasoningContent: reasoning}, nil, x); err != nil {
			return err
		}
		if e.Kind != graph.KindRunEnd {
			return nil
		}
		stop := "stop"
		c := base
		c.Choices = []chatChoice{{Delta: &chatDelta{}, FinishReason: &stop}}
		c.Status = string(e.Status)
		if err := sw.data(c); err != nil {
			return err
		}
		if usage {
			u := base
			u.Choices, u.Usage = []chatChoice{}, &chatUsage{}
			return sw.data(u)
		}
		return nil
	})
	if err == nil {
		sw.done()
		sw.flush()
	}
}
