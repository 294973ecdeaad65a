package cabin

import "testing"

// The English default set runs the same flows.
func TestEnglishFlows(t *testing.T) {
	a := newAPI(t, Options{Locale: LocaleEnglish})
	for _, f := range []struct {
		name  string
		turns []turn
	}{
		{"single", []turn{chatTurn("open the windows", TypeWorkflowResult, StatusCompleted, "Opened the windows.")}},
		{"slot", []turn{
			chatTurn("navigate", TypeAskSlot, StatusWaitingSlot, "Where would you like to go?"),
			chatTurn("to the airport", TypeWorkflowResult, StatusCompleted, "Navigating to the airport"),
		}},
		{"conditional", []turn{
			chatTurn("check order A123 and cancel it if it hasn't shipped", TypeAskConfirmation, StatusWaitingConfirmation, "waiting to ship", "Shall I cancel order A123?"),
			chatTurn("yes", TypeWorkflowResult, StatusCompleted, "Order A123 is cancelled"),
		}},
		{"sequence", []turn{chatTurn("open the passenger window and then set the ac to 21 degrees", TypeWorkflowResult, StatusCompleted,
			"OK, the passenger's windows are open, the air conditioning is set to 21 degrees too.")}},
		{"rewrite", []turn{
			chatTurn("turn on the ac", TypeWorkflowResult, StatusCompleted, "24 degrees"),
			chatTurn("a bit cooler", TypeWorkflowResult, StatusCompleted, "set to 23 degrees"),
		}},
		{"social with a pending task", []turn{
			chatTurn("unlock the doors", TypeAskConfirmation, StatusWaitingConfirmation, "high-risk"),
			chatTurn("thanks", TypeText, StatusSocial, "still waiting for your OK to unlock the doors"),
			chatTurn("no", TypeWorkflowResult, StatusCompleted, "I won't unlock the doors"),
		}},
		{"reject", []turn{chatTurn("what is the weather tomorrow", TypeReject, StatusRejected, "can't help")}},
		{"stop", []turn{
			chatTurn("check my order", TypeAskSlot, StatusWaitingSlot, "order number"),
			chatTurn("never mind", TypeText, StatusStopped, "stopped"),
		}},
	} {
		t.Run(f.name, func(t *testing.T) {
			for i, tu := range f.turns {
				r := a.chat("en-"+f.name, tu.text)
				want(t, r, tu.typ, tu.stat, tu.says...)
				checkReply(t, i, r)
			}
		})
	}
}
