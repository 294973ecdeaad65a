package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// This file keeps a thread's conversation: the chat convention of the
// LangGraph API ({"messages": [...]} as a run's input, a "messages" list
// in the state's values) and the conversation an OpenAI chat client sends
// again on every request.
//
// The conversation is kept in a table of its own (loom_chat_messages),
// one row a message, rather than in the checkpoints or the thread's
// metadata: the agents' states are typed and hold no messages, undo and
// retention rewrite checkpoints, and finding the thread whose
// conversation a stateless client continues must be one indexed look-up
// (owner, conv_hash), not a scan of every thread's history. Each row
// carries the hash of the conversation up to and including it.
//
// A person's message is recorded when its run is accepted; the agent's
// reply when the chat that asked has it, or else, when the next message
// on the thread comes, from the state the previous run ended with (the
// agent's Reply). Until then the values of the thread show that reply
// from its latest state.

// chatMigration is the server's migration that adds the conversation
// table (see store.go's migrations).
var chatMigration = store.Migration{
	Version: 5, Name: "chat conversations",
	SQL: `
CREATE TABLE IF NOT EXISTS loom_chat_messages (
	thread    text    NOT NULL,
	seq       integer NOT NULL,
	owner     text    NOT NULL,
	role      text    NOT NULL,
	msg_id    text    NOT NULL,
	content   text    NOT NULL,
	conv_hash text    NOT NULL,
	checkpnt  text    NOT NULL DEFAULT '',
	PRIMARY KEY (thread, seq)
);
CREATE INDEX IF NOT EXISTS loom_chat_messages_hash ON loom_chat_messages (owner, conv_hash);
`,
}

// Roles of a conversation's messages, as LangChain names them.
const (
	roleHuman  = "human"
	roleAI     = "ai"
	roleSystem = "system"
	roleTool   = "tool"
)

// chatMessage is one message of a conversation: its LangChain role, text
// and id ("" when the client gave none).
type chatMessage struct {
	Role string
	Text string
	ID   string
	// Checkpoint, of a recorded reply, is the checkpoint its turn ended
	// with, where a conversation that goes another way from there forks.
	Checkpoint string
}

// lcMessage is a message as LangChain's clients read it in a state's
// values.
type lcMessage struct {
	Type             string         `json:"type"`
	Content          string         `json:"content"`
	ID               string         `json:"id"`
	AdditionalKwargs map[string]any `json:"additional_kwargs"`
	ResponseMetadata map[string]any `json:"response_metadata"`
}

// parseChatMessages reads a list of messages in LangChain's shape
// ({"type": "human", "content": …, "id": …}) or OpenAI's ({"role":
// "user", "content": …}); content is a string or a list of content
// parts, whose text parts are kept.
func parseChatMessages(raw json.RawMessage) ([]chatMessage, error) {
	var in []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		ID      string          `json:"id"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("messages must be a list of message objects")
	}
	out := make([]chatMessage, 0, len(in))
	for i, m := range in {
		kind := m.Type
		if kind == "" {
			kind = m.Role
		}
		var role string
		switch strings.ToLower(kind) {
		case "human", "user", "humanmessage", "humanmessagechunk":
			role = roleHuman
		case "ai", "assistant", "aimessage", "aimessagechunk":
			role = roleAI
		case "system", "developer", "systemmessage":
			role = roleSystem
		case "tool", "function", "toolmessage":
			role = roleTool
		default:
			return nil, fmt.Errorf("message %d: type %q is not one of human, ai, system, tool (or role user, assistant, system, tool)", i, kind)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, chatMessage{Role: role, Text: text, ID: m.ID})
	}
	return out, nil
}

// contentText is the text of a message's content: a string, or the text
// parts of a list of content parts.
func contentText(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// lastHuman returns the index of the last human message, or -1.
func lastHuman(msgs []chatMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == roleHuman {
			return i
		}
	}
	return -1
}

// normalText is a message's text as conversations are compared: spaces
// collapsed, trimmed.
func normalText(s string) string { return strings.Join(strings.Fields(s), " ") }

// convHash is the hash of a conversation: each message's role and
// normalised text, in order, chained (the hash of a conversation one
// message longer is extendHash of its hash), so that recording a message
// needs only the hash before it. System and tool messages do not count:
// clients add and drop them freely.
func convHash(msgs []chatMessage) string {
	h := ""
	for _, m := range msgs {
		h = extendHash(h, m)
	}
	return h
}

// extendHash is the hash of the conversation whose hash is prior ("" for
// none) followed by m.
func extendHash(prior string, m chatMessage) string {
	if m.Role != roleHuman && m.Role != roleAI {
		return prior
	}
	h := sha256.New()
	h.Write([]byte(prior))
	h.Write([]byte{0})
	h.Write([]byte(m.Role))
	h.Write([]byte{0})
	h.Write([]byte(normalText(m.Text)))
	return hex.EncodeToString(h.Sum(nil))
}

// chatRow is a recorded message.
type chatRow struct {
	seq int
	chatMessage
	hash string
}

// conversation returns thread's recorded messages, in order.
func (s *records) conversation(ctx context.Context, thread string) ([]chatRow, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT seq, role, msg_id, content, conv_hash FROM loom_chat_messages WHERE thread = ? ORDER BY seq`), thread)
	if err != nil {
		return nil, fmt.Errorf("read conversation of thread %s: %w", publicID(thread), err)
	}
	defer rows.Close()
	var out []chatRow
	for rows.Next() {
		var r chatRow
		if err := rows.Scan(&r.seq, &r.Role, &r.ID, &r.Text, &r.hash); err != nil {
			return nil, fmt.Errorf("read conversation of thread %s: %w", publicID(thread), err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read conversation of thread %s: %w", publicID(thread), err)
	}
	return out, nil
}

// appendMessages records msgs at the end of thread's conversation. With
// reply set, it records them only when the conversation ends with a
// person's message (a reply not yet recorded), so that two who record
// the same reply record it once.
func (s *records) appendMessages(ctx context.Context, thread, owner string, reply bool, msgs ...chatMessage) error {
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		seq, last, hash := -1, "", ""
		err := tx.QueryRowContext(ctx, s.q(`SELECT seq, role, conv_hash FROM loom_chat_messages WHERE thread = ? ORDER BY seq DESC LIMIT 1`), thread).Scan(&seq, &last, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		if err != nil {
			return err
		}
		if reply && last != roleHuman {
			return nil
		}
		for _, m := range msgs {
			seq++
			hash = extendHash(hash, m)
			id := m.ID
			if id == "" {
				id = messageID(thread, seq, m.Role)
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO loom_chat_messages (thread, seq, owner, role, msg_id, content, conv_hash, checkpnt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
				thread, seq, owner, m.Role, id, m.Text, hash, m.Checkpoint); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record conversation of thread %s: %w", publicID(thread), err)
	}
	return nil
}

// conversationThread returns the thread of owner whose whole recorded
// conversation hashes to hash, the latest such, or "" when there is none.
func (s *records) conversationThread(ctx context.Context, owner, hash string) (string, error) {
	var thread string
	err := s.db.SQL().QueryRowContext(ctx, s.q(`SELECT m.thread FROM loom_chat_messages m JOIN loom_threads t ON t.id = m.thread
 WHERE m.owner = ? AND m.conv_hash = ? AND m.seq = (SELECT MAX(seq) FROM loom_chat_messages WHERE thread = m.thread)
 ORDER BY t.updated DESC, m.thread LIMIT 1`), owner, hash).Scan(&thread)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the thread of a conversation: %w", err)
	}
	return thread, nil
}

// forkPoint returns the latest thread of owner with a reply, not its
// last message, that ends a conversation hashing to hash, and the
// checkpoint that reply's turn ended with, and the conversation up to it;
// thread is "" when there is none.
func (s *records) forkPoint(ctx context.Context, owner, hash string) (thread, cp string, upto []chatMessage, err error) {
	var seq int
	err = s.db.SQL().QueryRowContext(ctx, s.q(`SELECT m.thread, m.seq, m.checkpnt FROM loom_chat_messages m JOIN loom_threads t ON t.id = m.thread
 WHERE m.owner = ? AND m.conv_hash = ? AND m.role = ? AND m.checkpnt <> '' ORDER BY t.updated DESC, m.thread LIMIT 1`), owner, hash, roleAI).Scan(&thread, &seq, &cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("find where a conversation goes another way: %w", err)
	}
	rows, err := s.conversation(ctx, thread)
	if err != nil {
		return "", "", nil, err
	}
	for _, r := range rows {
		if r.seq <= seq {
			upto = append(upto, r.chatMessage)
		}
	}
	return thread, cp, upto, nil
}

// messageID names message seq of thread when its client gave no id: the
// same on every read.
func messageID(thread string, seq int, role string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", thread, seq)))
	return role + "-" + hex.EncodeToString(h[:8])
}

// settleReply records the agent's reply to the last message of thread's
// conversation when it is not recorded yet: from the thread's latest
// state, which is where the run that answered it ended.
func (s *Server) settleReply(ctx context.Context, a *builtAgent, t *Thread) error {
	rows, err := s.records.conversation(ctx, t.ID)
	if err != nil || len(rows) == 0 || rows[len(rows)-1].Role != roleHuman {
		return err
	}
	cp, err := s.head(ctx, t.ID)
	if err != nil || cp == nil {
		return err
	}
	return s.records.appendMessages(ctx, t.ID, t.Owner, true, chatMessage{Role: roleAI, Text: strings.TrimSpace(a.reply(cp.State, cp.Interrupt)), Checkpoint: cp.ID})
}

// chatInput turns a person's message on thread t (nil for a new thread)
// into a run's input for agent a: on a thread that waits on a question,
// the answer that resumes it (Agent.Answer, checked against what the
// question asks for), else the agent's input for it (Agent.FromChat,
// checked against its input schema). head and state are the question and
// the state the thread waits with (nil when it does not). An answer that
// does not fit is returned as unanswered, err nil.
func (s *Server) chatInput(ctx context.Context, a *builtAgent, t *Thread, text string) (in graph.JSONInput, head *checkpoint.Interrupt, state json.RawMessage, unanswered, err error) {
	if t != nil && t.Status != StatusBusy && !s.busy(t.ID) {
		cp, err := s.head(ctx, t.ID)
		if err != nil {
			return in, nil, nil, nil, err
		}
		if cp != nil {
			head, state = cp.Interrupt, cp.State
		}
	}
	if head != nil {
		resume, err := a.answer(text, head)
		if err == nil {
			err = graph.CheckAnswer(head, resume)
		}
		if err != nil {
			return in, head, state, err, nil
		}
		in.Resume, in.Interrupt = resume, head.ID
		return in, head, state, nil, nil
	}
	if in.Update, err = a.fromChat(text); err != nil {
		return in, nil, nil, nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "message as input of agent %s: %v", a.Name, err)
	}
	if a.schema != nil {
		if err := a.schema.Validate(in.Update); err != nil {
			return in, nil, nil, nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "message as input of agent %s: %v", a.Name, err)
		}
	}
	return in, nil, nil, nil, nil
}

// chatConvention reports whether input is the chat convention for agent
// a — an object with "messages", a field the agent's own input does not
// have — and returns its messages.
func chatConvention(a *builtAgent, input json.RawMessage) ([]chatMessage, bool, error) {
	if t := bytes.TrimSpace(input); len(t) == 0 || t[0] != '{' {
		return nil, false, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return nil, false, nil
	}
	raw, ok := fields["messages"]
	if !ok || schemaHas(a.InputSchema, "messages") {
		return nil, false, nil
	}
	for k := range fields {
		if k != "messages" {
			return nil, true, fmt.Errorf("input with messages takes no other field (%q); send the agent's own input instead", k)
		}
	}
	msgs, err := parseChatMessages(raw)
	if err != nil {
		return nil, true, err
	}
	if lastHuman(msgs) < 0 {
		return nil, true, fmt.Errorf("messages: no human message")
	}
	return msgs, true, nil
}

// schemaHas reports whether a JSON schema declares property name.
func schemaHas(schema json.RawMessage, name string) bool {
	var sc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &sc) != nil {
		return false
	}
	_, ok := sc.Properties[name]
	return ok
}

// chatView shows a thread's conversation in the values of its state.
type chatView struct {
	a      *builtAgent
	thread string
	rows   []chatRow
}

// chatView reads thread's conversation for showing it; nil when the
// thread has none, or when it cannot be read (logged: the values are
// shown without it).
func (s *Server) chatView(ctx context.Context, a *builtAgent, thread string) *chatView {
	if a == nil {
		return nil
	}
	rows, err := s.records.conversation(ctx, thread)
	if err != nil {
		s.log.WarnContext(ctx, "conversation not shown in values", "thread", thread, "err", err)
		return nil
	}
	if len(rows) == 0 {
		return nil
	}
	return &chatView{a: a, thread: thread, rows: rows}
}

// values returns values, a state's fields, with "messages": the
// conversation as LangChain messages, and, with reply, the agent's reply
// to its last message taken from state and pending when it is not
// recorded yet. Values of an agent whose state has messages of its own
// are returned as they are, and so is everything when v is nil.
func (v *chatView) values(values, state json.RawMessage, pending *checkpoint.Interrupt, reply bool) json.RawMessage {
	if v == nil || !present(values) {
		return values
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(values, &fields) != nil || fields == nil {
		return values
	}
	if _, own := fields["messages"]; own {
		return values
	}
	msgs := make([]lcMessage, 0, len(v.rows)+1)
	for _, r := range v.rows {
		msgs = append(msgs, lcMessage{Type: r.Role, Content: r.Text, ID: r.ID, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}})
	}
	if last := v.rows[len(v.rows)-1]; reply && last.Role == roleHuman && present(state) {
		msgs = append(msgs, lcMessage{Type: roleAI, Content: strings.TrimSpace(v.a.reply(state, pending)), ID: messageID(v.thread, last.seq+1, roleAI),
			AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}})
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return values
	}
	fields["messages"] = b
	out, err := json.Marshal(fields)
	if err != nil {
		return values
	}
	return out
}

// recordReply records text as the agent's reply on run's thread, once
// the run ended, unless the reply is recorded already.
func (s *Server) recordReply(ctx context.Context, r *run, text string) {
	ctx = context.WithoutCancel(ctx)
	m := chatMessage{Role: roleAI, Text: strings.TrimSpace(text)}
	if cp, err := s.head(ctx, r.thread); err == nil && cp != nil {
		m.Checkpoint = cp.ID
	}
	if err := s.records.appendMessages(ctx, r.thread, r.owner, true, m); err != nil {
		s.log.WarnContext(ctx, "chat reply not recorded", "thread", r.thread, "err", err)
	}
}

// forkConversation returns a new thread for a client that sends a
// thread's conversation up to one of its replies and then goes another
// way (a regenerated or edited message after it): a copy of that thread
// as the reply's turn ended (checkpoint.Fork), with the conversation up
// to it; nil when no thread has that reply.
func (s *Server) forkConversation(ctx context.Context, owner string, a *builtAgent, earlier []chatMessage, fits func(string) (*Thread, error)) (*Thread, error) {
	key, cp, upto, err := s.records.forkPoint(ctx, owner, convHash(earlier))
	if err != nil || key == "" {
		return nil, err
	}
	src, err := fits(key)
	if src == nil || err != nil {
		return nil, err
	}
	c, err := s.newThread(ctx, "", owner, src.Metadata)
	if err != nil {
		return nil, err
	}
	if _, err := checkpoint.Fork(ctx, s.saver, src.ID, cp, c.ID, nil); err != nil {
		return nil, fmt.Errorf("fork thread %s for a conversation that goes another way: %w", publicID(src.ID), err)
	}
	for i := range upto {
		upto[i].ID = "" // the copy's messages are its own
	}
	if err := s.records.appendMessages(ctx, c.ID, owner, false, upto...); err != nil {
		return nil, err
	}
	s.log.DebugContext(ctx, "chat forks a thread where its conversation goes another way", "from", src.ID, "checkpoint", cp, "thread", c.ID)
	return c, nil
}

// continuedThread returns the thread of owner, for agent a, whose
// recorded conversation is earlier (the messages a chat client sent
// before its last one), or nil when there is none: the client starts a
// new conversation. When the agent's reply to the thread's last message
// is not recorded yet (the client did not wait for it, or it came through
// the LangGraph API), it is recorded from the thread's state first, and
// must then match too.
func (s *Server) continuedThread(ctx context.Context, owner string, a *builtAgent, earlier []chatMessage) (*Thread, error) {
	if convHash(earlier) == convHash(nil) {
		return nil, nil
	}
	fits := func(key string) (*Thread, error) {
		if key == "" {
			return nil, nil
		}
		t, err := s.records.thread(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if t.Owner != owner || (t.Agent != "" && t.Agent != a.Name) {
			return nil, nil
		}
		return t, nil
	}
	key, err := s.records.conversationThread(ctx, owner, convHash(earlier))
	if err != nil {
		return nil, err
	}
	if t, err := fits(key); t != nil || err != nil {
		return t, err
	}
	n := len(earlier)
	if n == 0 || earlier[n-1].Role != roleAI {
		return nil, nil
	}
	if t, err := s.forkConversation(ctx, owner, a, earlier, fits); t != nil || err != nil {
		return t, err
	}
	if key, err = s.records.conversationThread(ctx, owner, convHash(earlier[:n-1])); err != nil {
		return nil, err
	}
	t, err := fits(key)
	if t == nil || err != nil || t.Status == StatusBusy {
		return nil, err
	}
	if err := s.settleReply(ctx, a, t); err != nil {
		return nil, err
	}
	key, err = s.records.conversationThread(ctx, owner, convHash(earlier))
	if err != nil || key != t.ID {
		return nil, err
	}
	return t, nil
}

// withConversation returns end, a run's end on thread for agent, with
// the thread's conversation in its values (see chatView.values).
func (s *Server) withConversation(ctx context.Context, agent, thread string, end event) event {
	if end.Kind == graph.KindError {
		return end
	}
	if v := s.chatView(ctx, s.agents[agent], thread); v != nil {
		end.Data = v.values(end.Data, end.Data, end.Interrupt, true)
	}
	return end
}

// chatRunInput turns the messages of a LangGraph run's input in the chat
// convention into the run's input on thread t (nil for a new thread): the
// last human message, as a chat message is (chatInput). A message that
// does not answer the question the thread waits on is a 422 that repeats
// the question.
func (s *Server) chatRunInput(ctx context.Context, a *builtAgent, t *Thread, msgs []chatMessage) (graph.JSONInput, error) {
	if t != nil {
		if err := s.settleReply(ctx, a, t); err != nil {
			return graph.JSONInput{}, err
		}
	}
	in, head, state, unanswered, err := s.chatInput(ctx, a, t, msgs[lastHuman(msgs)].Text)
	if err != nil {
		return in, err
	}
	if unanswered != nil {
		s.log.DebugContext(ctx, "message does not answer the question", "thread", t.ID, "node", head.Node, "err", unanswered)
		return in, errorf(http.StatusUnprocessableEntity, "invalid_answer", "the message does not answer the question the thread waits on: %s", question(a.reply(state, head)))
	}
	return in, nil
}

// recordChatInput records the messages of a run's input in the chat
// convention on thread t: all of them on a thread without a conversation
// (a client that starts with some history), else the last human one.
func (s *Server) recordChatInput(ctx context.Context, t *Thread, msgs []chatMessage) {
	ctx = context.WithoutCancel(ctx)
	rows, err := s.records.conversation(ctx, t.ID)
	if err == nil {
		var add []chatMessage
		if len(rows) == 0 {
			for _, m := range msgs[:lastHuman(msgs)+1] {
				if m.Role == roleHuman || m.Role == roleAI {
					add = append(add, m)
				}
			}
		} else {
			add = []chatMessage{msgs[lastHuman(msgs)]}
		}
		err = s.records.appendMessages(ctx, t.ID, t.Owner, false, add...)
	}
	if err != nil {
		s.log.WarnContext(ctx, "chat message not recorded", "thread", t.ID, "err", err)
	}
}

// inputView is the conversation of a run's input in the chat convention
// on a temporary thread, which is not recorded: its messages, human and
// ai, up to the last human one.
func (s *Server) inputView(agent, thread string, msgs []chatMessage) *chatView {
	a := s.agents[agent]
	if a == nil {
		return nil
	}
	v := &chatView{a: a, thread: thread}
	for _, m := range msgs[:lastHuman(msgs)+1] {
		if m.Role != roleHuman && m.Role != roleAI {
			continue
		}
		if m.ID == "" {
			m.ID = messageID(thread, len(v.rows), m.Role)
		}
		v.rows = append(v.rows, chatRow{seq: len(v.rows), chatMessage: m})
	}
	return v
}
