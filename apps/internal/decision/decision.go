// Package decision asks a language model for a typed decision, as the apps
// do: one JSON object inside <DECISION></DECISION>, in the format of the
// decision's Go type.
package decision

import (
	"context"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

// Ask asks m for a decision of type T: the system prompt, told to answer
// with one JSON object inside <DECISION></DECISION> in T's format (told in
// Chinese when zh), and the user's message, with opts. A malformed
// answer is fed back (contract.Ask) at most twice.
func Ask[T any](ctx context.Context, m llm.Model, system, user string, zh bool, opts ...llm.Option) (T, error) {
	var zero T
	sch, err := schema.For[T]()
	if err != nil {
		return zero, err
	}
	tell := "\n\nAnswer with one JSON object inside <DECISION></DECISION>, in this format:\n"
	if zh {
		tell = "\n\n只输出一个 JSON 对象，放在 <DECISION></DECISION> 里，格式：\n"
	}
	msgs := []llm.Message{llm.System(system + tell + sch.Format()), llm.User(user)}
	return contract.Ask[T](ctx, contract.Chat(m, &msgs, opts...), contract.WithRetries(2))
}
