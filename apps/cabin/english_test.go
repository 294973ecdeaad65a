package cabin

import "testing"

// The English default set runs the same flows.
func TestEnglishFlows(t *testing.T) {
	a := newAPI(t, Options{Locale: localeEnglish})
	for _, f := range []struct {
		name  string
		turns []turn
	}{
		{"single", []turn{chatTurn("open the windows", typeWorkflowResult, statusCompleted, "Opened the windows.")}},
		{"slot", []turn{
			chatTurn("navigate", typeAskSlot, statusWaitingSlot, "Where would you like to go?"),
			chatTurn("to the airport", typeWorkflowResult, statusCompleted, "Navigating to the airport"),
		}},
		{"conditional", []turn{
			chatTurn("check order A123 and cancel it if it hasn't shipped", typeAskConfirmation, statusWaitingConfirmation, "waiting to ship", "Shall I cancel order A123?"),
			chatTurn("yes", typeWorkflowResult, statusCompleted, "Order A123 is cancelled"),
		}},
		{"sequence", []turn{chatTurn("open the passenger window and then set the ac to 21 degrees", typeWorkflowResult, statusCompleted,
			"OK, the passenger's windows are open, the air conditioning is set to 21 degrees too.")}},
		{"rewrite", []turn{
			chatTurn("turn on the ac", typeWorkflowResult, statusCompleted, "24 degrees"),
			chatTurn("a bit cooler", typeWorkflowResult, statusCompleted, "set to 23 degrees"),
		}},
		{"social with a pending task", []turn{
			chatTurn("unlock the doors", typeAskConfirmation, statusWaitingConfirmation, "high-risk"),
			chatTurn("thanks", typeText, statusSocial, "still waiting for your OK to unlock the doors"),
			chatTurn("no", typeWorkflowResult, statusCompleted, "I won't unlock the doors"),
		}},
		{"reject", []turn{chatTurn("what is the weather tomorrow", typeReject, statusRejected, "can't help")}},
		{"stop", []turn{
			chatTurn("check my order", typeAskSlot, statusWaitingSlot, "order number"),
			chatTurn("never mind", typeText, statusStopped, "stopped"),
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
