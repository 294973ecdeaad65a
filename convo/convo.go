// Package convo builds the copy of a conversation that a model sees from
// the full history, which is kept unchanged for display and storage.
//
// A view is, in order:
//
//  1. one system message: Config.System, then the pinned blocks (keyed,
//     replaced in place, rendered as <key>…</key>), then the summary of the
//     messages older than the window;
//  2. the recent window of the history (default 10 messages), with long tool
//     observations trimmed: JSON lists cut to 10 items plus a count such as
//     "... (+37 more)", long strings cut with a marker, and the whole
//     observation bounded in characters.
//
// The window never separates an assistant message with tool calls from its
// tool results: when the boundary would fall between them it moves back to
// include the call. When the view exceeds the budget (tokens and/or
// characters), observations are trimmed harder, then whole turns leave the
// window for the summary, down to the last user message.
//
// The summary is cached in a Summary that lives in graph state, under the
// number of messages it covers and a hash of the Config; it is recomputed
// only when either changes, incrementally (previous summary plus the
// messages that just left the window) when only the count grew. Messages
// once summarised stay summarised.
//
// # Token counts
//
// Tokens are counted with tiktoken (cl100k_base by default, or o200k_base),
// loaded from the offline BPE files of tiktoken-go-loader, never from the
// network. They are exact for OpenAI models. Other providers (DeepSeek,
// Qwen, Doubao, GLM, Llama) use their own tokenizers: for English and code
// their counts are usually close to cl100k's, and for Chinese cl100k
// usually counts more tokens than those tokenizers do, so a cl100k budget
// errs on the safe side there; o200k_base is closer for Chinese. Leave a
// margin (10-20%) under the model's context limit, or supply a Counter that
// wraps the provider's tokenizer. Per message, 3 tokens of framing are
// added, and 3 per view for the reply, as OpenAI documents.
package convo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/loomkit/loom/llm"
)

// Message is a message of the history: package llm's message.
type Message = llm.Message

// Pin is a block of context rendered at the top of every view: the plan,
// the current step, the known tables.
type Pin struct {
	Key     string `json:"key"`
	Content string `json:"content"`
}

// Pins are the pinned blocks of a run, in order. They live in graph state.
// Set and Remove return a new slice and never change the old one, so a
// state snapshot taken before is not affected.
type Pins []Pin

// Set replaces the content of the block with this key in place, or appends
// a new block.
func (p Pins) Set(key, content string) Pins {
	out := slices.Clone(p)
	for i := range out {
		if out[i].Key == key {
			out[i].Content = content
			return out
		}
	}
	return append(out, Pin{Key: key, Content: content})
}

// Remove drops the block with this key.
func (p Pins) Remove(key string) Pins {
	return slices.DeleteFunc(slices.Clone(p), func(x Pin) bool { return x.Key == key })
}

// Get returns the content of the block with this key.
func (p Pins) Get(key string) (string, bool) {
	for _, x := range p {
		if x.Key == key {
			return x.Content, true
		}
	}
	return "", false
}

// Summarizer summarises messages that left the window. previous is the
// summary of the messages before them ("" when starting over); the result
// replaces it, covering previous and older together.
type Summarizer func(ctx context.Context, previous string, older []Message) (string, error)

// Counter counts the tokens of a text.
type Counter interface {
	Count(text string) int
}

// Trim bounds tool observations.
type Trim struct {
	// MaxItems is how many items of a JSON list are kept (default 10).
	MaxItems int `json:"max_items"`
	// MaxString is how many characters of a JSON string are kept
	// (default 500).
	MaxString int `json:"max_string"`
	// MaxChars bounds the whole observation in characters (default 4000).
	MaxChars int `json:"max_chars"`
}

// Config says how views are built. Its data fields (all but System,
// Summarizer and Counter) make up the hash that keys the summary cache.
type Config struct {
	// System is the system prompt, rendered first. It may change from
	// call to call without invalidating the summary.
	System string `json:"-"`
	// Window is the number of recent messages kept whole (default 10).
	Window int `json:"window"`
	// MaxTokens is the token budget of the view; 0 means none.
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxChars is the character budget of the view; 0 means none. Seed
	// 004 uses 5000.
	MaxChars int `json:"max_chars,omitempty"`
	// SummaryMaxChars bounds the extractive summary (default 2000).
	SummaryMaxChars int `json:"summary_max_chars"`
	// Observation bounds tool observations in the window.
	Observation Trim `json:"observation"`
	// Encoding is the tiktoken encoding: cl100k_base (default) or
	// o200k_base. Ignored when Counter is set.
	Encoding string `json:"encoding"`
	// SummaryKey names the Summarizer and its prompt version; change it
	// to invalidate cached summaries when the summariser changes.
	SummaryKey string `json:"summary_key,omitempty"`
	// Summarizer summarises older messages; nil means Extractive.
	Summarizer Summarizer `json:"-"`
	// Counter counts tokens; nil means tiktoken with Encoding.
	Counter Counter `json:"-"`
}

// Summary is the cached summary of the messages before the window. It
// lives in graph state and round-trips through JSON.
type Summary struct {
	Text string `json:"text,omitempty"`
	// Count is the number of history messages the summary covers.
	Count int `json:"count"`
	// ConfigHash is the hash of the Config it was made with.
	ConfigHash string `json:"config_hash,omitempty"`
}

// View is the model's copy of the conversation.
type View struct {
	Messages []Message
	// Tokens and Chars measure Messages.
	Tokens int
	Chars  int
	// Summarized is the number of history messages the summary covers.
	Summarized int
	// OverBudget is set when even the smallest view exceeds the budget.
	OverBudget bool
}

// Builder builds views. It is safe for concurrent use and caches token
// counts and trimmed observations, so reuse one per configuration.
type Builder struct {
	cfg     Config
	hash    string
	summary Summarizer
	counter Counter
	log     *slog.Logger

	mu         sync.Mutex
	measures   map[string]measure
	trims      map[trimKey]string
	cacheBytes int // bytes of keys and values held by the two caches
}

type measure struct{ tokens, chars int }

type trimKey struct {
	content string
	level   int
}

// The caches are dropped whole when they reach either bound.
const (
	cacheLimit      = 8192
	cacheBytesLimit = 32 << 20
)

// room makes room for n more bytes in the caches; b.mu is held.
func (b *Builder) room(n int) {
	if len(b.measures) >= cacheLimit || len(b.trims) >= cacheLimit || b.cacheBytes+n > cacheBytesLimit {
		clear(b.measures)
		clear(b.trims)
		b.cacheBytes = 0
	}
	b.cacheBytes += n
}

// New returns a Builder for cfg, with defaults filled in.
func New(cfg Config) *Builder {
	if cfg.Window <= 0 {
		cfg.Window = 10
	}
	if cfg.SummaryMaxChars <= 0 {
		cfg.SummaryMaxChars = 2000
	}
	if cfg.Observation.MaxItems <= 0 {
		cfg.Observation.MaxItems = 10
	}
	if cfg.Observation.MaxString <= 0 {
		cfg.Observation.MaxString = 500
	}
	if cfg.Observation.MaxChars <= 0 {
		cfg.Observation.MaxChars = 4000
	}
	if cfg.Encoding == "" {
		cfg.Encoding = "cl100k_base"
	}
	b := &Builder{cfg: cfg, log: slog.Default(), measures: map[string]measure{}, trims: map[trimKey]string{}}
	data, _ := json.Marshal(cfg)
	sum := sha256.Sum256(data)
	b.hash = hex.EncodeToString(sum[:8])
	b.summary = cfg.Summarizer
	if b.summary == nil {
		b.summary = Extractive(cfg.SummaryMaxChars)
	}
	b.counter = cfg.Counter
	if b.counter == nil {
		c, err := Tiktoken(cfg.Encoding)
		if err != nil {
			b.log.Warn("convo: tiktoken unavailable, estimating tokens", "encoding", cfg.Encoding, "err", err)
			c = Estimate{}
		}
		b.counter = c
	}
	return b
}

// ConfigHash returns the hash of the configuration that keys the summary
// cache.
func (b *Builder) ConfigHash() string { return b.hash }

// Build returns the model's view of history. cache is the summary kept in
// graph state: it is read, and replaced when the summary is recomputed.
// history is not modified; the view shares ToolCalls slices with it.
// The error is the Summarizer's, wrapped.
func (b *Builder) Build(ctx context.Context, history []Message, pins Pins, cache *Summary) (View, error) {
	if cache == nil {
		cache = &Summary{}
	}
	n := len(history)
	start := windowStart(history, n, b.cfg.Window)
	// The budget may push the window's start up to the last user message,
	// or to the last turn when that message is older than the window.
	limit := lastTurn(history)
	if limit < start {
		limit = windowStart(history, n, 1)
	}
	if cache.ConfigHash == b.hash && cache.Count > start && cache.Count <= limit {
		start = cache.Count // summarised messages stay summarised
	}

	summary, err := b.summarize(ctx, history, start, cache)
	if err != nil {
		return View{}, err
	}
	v := b.assemble(history, pins, summary, start, 0)
	if !b.over(v) {
		return v, nil
	}
	// Trim observations harder, then move turns out of the window. While
	// searching, the summary is the one for the current start: close enough.
	v = b.assemble(history, pins, summary, start, 1)
	moved := start
	for b.over(v) {
		next := nextTurn(history, moved, n)
		if next > limit || next >= n {
			break
		}
		moved = next
		v = b.assemble(history, pins, summary, moved, 1)
	}
	if moved != start {
		summary, err = b.summarize(ctx, history, moved, cache)
		if err != nil {
			return View{}, err
		}
		v = b.assemble(history, pins, summary, moved, 1)
	}
	// Last resort: keep only the most recent part of the summary (the cache
	// keeps all of it).
	for b.over(v) && summary != "" {
		summary = tailHalf(summary)
		v = b.assemble(history, pins, summary, moved, 1)
	}
	v.OverBudget = b.over(v)
	return v, nil
}

// tailHalf keeps the second half of a summary, from a line start if there
// is one, marked as cut.
func tailHalf(s string) string {
	s = strings.TrimPrefix(s, summaryCut)
	if utf8.RuneCountInString(s) < 40 {
		return ""
	}
	half := s[len(s)/2:]
	if i := strings.IndexByte(half, '\n'); i >= 0 && i < len(half)-1 {
		half = half[i+1:]
	} else {
		for len(half) > 0 && !utf8.RuneStart(half[0]) {
			half = half[1:]
		}
	}
	return summaryCut + half
}

const summaryCut = "(summary cut to fit) …"

func (b *Builder) over(v View) bool {
	return (b.cfg.MaxTokens > 0 && v.Tokens > b.cfg.MaxTokens) || (b.cfg.MaxChars > 0 && v.Chars > b.cfg.MaxChars)
}

// windowStart returns where a window of size w over history[:n] starts,
// moved back so that no tool result is separated from its call.
func windowStart(h []Message, n, w int) int {
	s := max(0, n-w)
	for s > 0 && h[s].Role == llm.RoleTool {
		s--
	}
	return s
}

// lastTurn returns the index of the last user message (or of the last
// message, moved back over tool results, when there is none): the window
// never starts after it.
func lastTurn(h []Message) int {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser {
			return i
		}
	}
	return windowStart(h, len(h), 1)
}

// nextTurn returns the start of the unit after the one at s: a message and
// the tool results that follow it.
func nextTurn(h []Message, s, n int) int {
	s++
	for s < n && h[s].Role == llm.RoleTool {
		s++
	}
	return s
}

// summarize returns the summary of history[:count], from the cache when it
// matches, else from the Summarizer (incrementally when the cache covers a
// prefix), updating the cache.
func (b *Builder) summarize(ctx context.Context, history []Message, count int, cache *Summary) (string, error) {
	if count == 0 {
		return "", nil
	}
	if cache.ConfigHash == b.hash && cache.Count == count {
		return cache.Text, nil
	}
	prev, from := "", 0
	if cache.ConfigHash == b.hash && cache.Count > 0 && cache.Count < count {
		prev, from = cache.Text, cache.Count
	}
	text, err := b.summary(ctx, prev, history[from:count])
	if err != nil {
		return "", fmt.Errorf("convo summarize messages %d to %d: %w", from, count, err)
	}
	*cache = Summary{Text: text, Count: count, ConfigHash: b.hash}
	return text, nil
}

// assemble builds the view for a window starting at start.
func (b *Builder) assemble(history []Message, pins Pins, summary string, start, level int) View {
	msgs := make([]Message, 0, len(history)-start+1)
	sys := b.systemText(pins, summary, start)
	v := View{Summarized: start, Tokens: 3}
	if sys != "" {
		msgs = append(msgs, Message{Role: llm.RoleSystem, Content: sys})
		b.add(&v, &msgs[0])
	}
	for i := start; i < len(history); i++ {
		m := history[i]
		if m.Role == llm.RoleTool {
			m.Content = b.trim(m.Content, level)
		}
		msgs = append(msgs, m)
		b.add(&v, &m)
	}
	v.Messages = msgs
	return v
}

func (b *Builder) add(v *View, m *Message) {
	me := b.measure(m.Content)
	v.Tokens += 3 + me.tokens
	v.Chars += me.chars
	for _, c := range m.ToolCalls {
		a := b.measure(c.Arguments)
		v.Tokens += 3 + b.measure(c.Name).tokens + a.tokens
		v.Chars += a.chars
	}
}

func (b *Builder) systemText(pins Pins, summary string, count int) string {
	var sb strings.Builder
	if b.cfg.System != "" {
		sb.WriteString(b.cfg.System)
	}
	for _, p := range pins {
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString("<")
		sb.WriteString(p.Key)
		sb.WriteString(">\n")
		sb.WriteString(p.Content)
		sb.WriteString("\n</")
		sb.WriteString(p.Key)
		sb.WriteString(">")
	}
	if summary != "" {
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString("Summary of the ")
		sb.WriteString(strconv.Itoa(count))
		sb.WriteString(" earlier messages of this conversation:\n")
		sb.WriteString(summary)
	}
	return sb.String()
}

// measure counts tokens and characters of s, cached.
func (b *Builder) measure(s string) measure {
	if s == "" {
		return measure{}
	}
	b.mu.Lock()
	me, ok := b.measures[s]
	b.mu.Unlock()
	if ok {
		return me
	}
	me = measure{tokens: b.counter.Count(s), chars: utf8.RuneCountInString(s)}
	b.mu.Lock()
	b.room(len(s))
	b.measures[s] = me
	b.mu.Unlock()
	return me
}

// trim bounds an observation at a level (0 normal, 1 harder), cached.
func (b *Builder) trim(s string, level int) string {
	t := b.cfg.Observation
	if level > 0 {
		t = Trim{MaxItems: min(t.MaxItems, 3), MaxString: min(t.MaxString, 100), MaxChars: max(t.MaxChars/4, 200)}
	}
	if s == "" {
		return s
	}
	key := trimKey{s, level}
	b.mu.Lock()
	out, ok := b.trims[key]
	b.mu.Unlock()
	if ok {
		return out
	}
	out = TrimObservation(s, t)
	b.mu.Lock()
	b.room(len(s) + len(out))
	b.trims[key] = out
	b.mu.Unlock()
	return out
}

// Extractive returns the Summarizer used when none is configured: the
// first line of each user and assistant message ("user: …", "assistant:
// …", or the tools an assistant called), each cut at 160 characters, the
// whole bounded to maxChars by dropping the oldest lines.
func Extractive(maxChars int) Summarizer {
	return func(ctx context.Context, previous string, older []Message) (string, error) {
		var lines []string
		dropped := false
		if previous != "" {
			for l := range strings.SplitSeq(previous, "\n") {
				if l == omitted {
					dropped = true
					continue
				}
				lines = append(lines, l)
			}
		}
		for _, m := range older {
			if l := summaryLine(m); l != "" {
				lines = append(lines, l)
			}
		}
		total := 0
		for _, l := range lines {
			total += utf8.RuneCountInString(l) + 1
		}
		size := func() int {
			if dropped {
				return total + utf8.RuneCountInString(omitted) + 1
			}
			return total
		}
		for len(lines) > 0 && size() > maxChars {
			total -= utf8.RuneCountInString(lines[0]) + 1
			lines = lines[1:]
			dropped = true
		}
		if dropped {
			lines = append([]string{omitted}, lines...)
		}
		return strings.Join(lines, "\n"), nil
	}
}

const omitted = "(earlier turns omitted)"

func summaryLine(m Message) string {
	switch m.Role {
	case llm.RoleUser, llm.RoleAssistant:
	default:
		return ""
	}
	text := strings.TrimSpace(m.Content)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = strings.TrimSpace(text[:i])
	}
	if text == "" && len(m.ToolCalls) > 0 {
		names := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			names[i] = c.Name
		}
		text = "called " + strings.Join(names, ", ")
	}
	if text == "" {
		return ""
	}
	return string(m.Role) + ": " + clipRunes(text, 160)
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
