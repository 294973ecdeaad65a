package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/loomkit/loom/llm"
)

// params builds the request body for msgs and o.
func (m *Model) params(msgs []llm.Message, o llm.Options, stream bool) (oa.ChatCompletionNewParams, error) {
	p := oa.ChatCompletionNewParams{Model: m.cfg.Model}
	if o.Model != "" {
		p.Model = o.Model
	}
	for i, msg := range msgs {
		wire, err := m.message(msg)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, wire)
	}
	if o.Temperature != nil {
		p.Temperature = oa.Float(*o.Temperature)
	}
	if o.MaxTokens > 0 {
		if m.provider == ProviderOpenAI {
			p.MaxCompletionTokens = oa.Int(int64(o.MaxTokens))
		} else {
			p.MaxTokens = oa.Int(int64(o.MaxTokens))
		}
	}
	if len(o.Stop) > 0 {
		p.Stop = oa.ChatCompletionNewParamsStopUnion{OfStringArray: o.Stop}
	}
	if o.JSON {
		p.ResponseFormat = oa.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	for _, t := range o.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = oa.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
			def.Parameters = schema
		}
		p.Tools = append(p.Tools, oa.ChatCompletionFunctionTool(def))
	}
	switch o.ToolChoice {
	case "":
	case "auto", "none", "required":
		p.ToolChoice = oa.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oa.String(o.ToolChoice)}
	default:
		p.ToolChoice = oa.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &oa.ChatCompletionNamedToolChoiceParam{
			Function: oa.ChatCompletionNamedToolChoiceFunctionParam{Name: o.ToolChoice},
		}}
	}

	extra := map[string]any{}
	if o.Thinking != nil {
		m.thinking(extra, *o.Thinking)
	}
	maps.Copy(extra, o.Extra)
	if stream {
		extra["stream"] = true
		p.StreamOptions.IncludeUsage = oa.Bool(true)
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p, nil
}

// thinking adds the provider's thinking switch to the request body.
func (m *Model) thinking(extra map[string]any, on bool) {
	state := map[bool]string{true: "enabled", false: "disabled"}[on]
	switch m.provider {
	case ProviderQwen:
		extra["enable_thinking"] = on
	case ProviderDeepSeek, ProviderDoubao:
		extra["thinking"] = map[string]any{"type": state}
	case ProviderVLLM:
		// Qwen3 templates read enable_thinking; DeepSeek-V3.1 and Granite read thinking.
		extra["chat_template_kwargs"] = map[string]any{"enable_thinking": on, "thinking": on}
	case ProviderOllama:
		extra["reasoning_effort"] = map[bool]string{true: "medium", false: "none"}[on]
	default:
		m.log.Debug("openai: thinking switch not sent: the provider has none", "thinking", on)
	}
}

// message converts one message to the wire.
func (m *Model) message(msg llm.Message) (oa.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case llm.RoleSystem:
		return oa.SystemMessage(msg.Content), nil
	case llm.RoleUser:
		return oa.UserMessage(msg.Content), nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return oa.ChatCompletionMessageParamUnion{}, errors.New("tool message has no tool_call_id")
		}
		return oa.ToolMessage(msg.Content, msg.ToolCallID), nil
	case llm.RoleAssistant:
		a := oa.ChatCompletionAssistantMessageParam{}
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = oa.String(msg.Content)
		}
		for _, tc := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, oa.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oa.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				},
			})
		}
		if m.cfg.SendReasoning && msg.Reasoning != "" {
			a.SetExtraFields(map[string]any{"reasoning_content": msg.Reasoning})
		}
		return oa.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return oa.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// fromCompletion converts a whole completion.
func fromCompletion(c *oa.ChatCompletion) (*llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, errors.New("response has no choices")
	}
	ch := c.Choices[0]
	msg := llm.Message{
		Role:      llm.RoleAssistant,
		Content:   ch.Message.Content,
		Reasoning: reasoningOf(ch.Message.JSON.ExtraFields),
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return &llm.Response{Message: msg, FinishReason: llm.FinishReason(ch.FinishReason), Usage: usageOf(c.Usage)}, nil
}

// reasoningOf reads the reasoning a provider put in a field the OpenAI
// schema does not have: reasoning_content (DeepSeek, Qwen, Doubao, older
// vLLM) or reasoning (vLLM, Ollama).
func reasoningOf(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		// Extra fields are never Valid (the schema does not know them);
		// their raw JSON is all there is.
		var s string
		if f, ok := extra[key]; ok && json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func usageOf(u oa.CompletionUsage) llm.Usage {
	out := llm.Usage{
		PromptTokens:     int(u.PromptTokens),
		CompletionTokens: int(u.CompletionTokens),
		TotalTokens:      int(u.TotalTokens),
		ReasoningTokens:  int(u.CompletionTokensDetails.ReasoningTokens),
		CachedTokens:     int(u.PromptTokensDetails.CachedTokens),
	}
	if out.CachedTokens == 0 {
		// DeepSeek reports its prompt cache as prompt_cache_hit_tokens.
		if f, ok := u.JSON.ExtraFields["prompt_cache_hit_tokens"]; ok {
			n, _ := strconv.Atoi(f.Raw())
			out.CachedTokens = n
		}
	}
	return out
}

// chunkState carries what a stream has told so far beyond its deltas.
type chunkState struct {
	finish  llm.FinishReason
	usage   *llm.Usage
	calls   int    // tool calls seen
	lastIdx int    // index of the last tool-call fragment
	lastID  string // id of the last tool call
}

// chunk converts one stream event. Only the first choice is read.
func (st *chunkState) chunk(c oa.ChatCompletionChunk) llm.Chunk {
	var out llm.Chunk
	if c.JSON.Usage.Valid() {
		u := usageOf(c.Usage)
		st.usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		out.Content += d.Content
		out.Reasoning += reasoningOf(d.JSON.ExtraFields)
		for _, tc := range d.ToolCalls {
			idx := int(tc.Index)
			if !tc.JSON.Index.Valid() {
				// Some servers leave out the index: a new id starts a new call.
				idx = st.lastIdx
				if tc.ID != "" && (st.calls == 0 || tc.ID != st.lastID) {
					idx = st.calls
				}
			}
			if idx >= st.calls {
				st.calls = idx + 1
			}
			st.lastIdx = idx
			if tc.ID != "" {
				st.lastID = tc.ID
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCallDelta{
				Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			})
		}
		if ch.FinishReason != "" {
			st.finish = llm.FinishReason(ch.FinishReason)
		}
	}
	return out
}

func empty(c llm.Chunk) bool {
	return c.Content == "" && c.Reasoning == "" && len(c.ToolCalls) == 0 && c.FinishReason == "" && c.Usage == nil
}
