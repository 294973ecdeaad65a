package contract_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/contract"
)

// Decision is what an execute step of a ReAct agent answers.
type Decision struct {
	Speak  string `json:"speak" jsonschema:"description=what to tell the user"`
	Action string `json:"action" jsonschema:"enum=continue,enum=ask_user,enum=done"`
	Reason string `json:"reason,omitempty"`
}

func ExampleDecode() {
	answer := "Let me check.\n<DECISION>{\"speak\": \"All set.\", \"action\": \"done\",}</DECISION>"
	d, err := contract.Decode[Decision](answer)
	fmt.Println(d.Action, d.Speak, err)

	_, err = contract.Decode[Decision](`{"speak": "ok", "action": "finish"}`)
	fmt.Println(err)
	// Output:
	// done All set. <nil>
	// field action: must be one of continue, ask_user, done; got "finish"
}

func ExampleAsk() {
	answers := []string{
		`{"speak": "ok", "action": "finish"}`,
		`<DECISION>{"speak": "ok", "action": "done"}</DECISION>`,
	}
	n := 0
	ask := func(ctx context.Context, feedback string) (string, error) {
		if feedback != "" {
			fmt.Println(feedback)
		}
		n++
		return answers[n-1], nil
	}
	d, err := contract.Ask[Decision](context.Background(), ask)
	fmt.Println(d.Action, err)
	// Output:
	// Your previous answer could not be used:
	// - field action: must be one of continue, ask_user, done; got "finish"
	// Answer again with one JSON object inside <DECISION></DECISION> in this format (fields marked ? are optional):
	// {
	//   "speak": string,  // what to tell the user
	//   "action": "continue" | "ask_user" | "done",
	//   "reason"?: string
	// }
	// done <nil>
}

func ExampleSplitter() {
	sp := contract.NewSplitter[Decision]()
	for _, chunk := range []string{`<DECI`, `SION>{"speak":"Here`, ` you go","action":"done"}</DEC`, "ISION>\nYour plan", " is ready."} {
		ready, text := sp.Write(chunk)
		if ready {
			d, err := sp.Result()
			fmt.Printf("[decision %s %v]\n", d.Action, err)
		}
		if text != "" {
			fmt.Printf("%q\n", text)
		}
	}
	sp.Close()
	// Output:
	// [decision done <nil>]
	// "Your plan"
	// " is ready."
}
