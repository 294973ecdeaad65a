package cabin

import "testing"

// A value out of range is asked again with the range, in the user's
// language, and an earlier value is not used instead.
func TestOutOfRange(t *testing.T) {
	a := newAPI(t, Options{})
	want(t, a.chat("range-zh", "把空调调到35度"), typeAskSlot, statusWaitingSlot, "16 到 32", "35")
	want(t, a.chat("range-zh", "35"), typeAskSlot, statusWaitingSlot, "16 到 32")
	want(t, a.chat("range-zh", "24"), typeWorkflowResult, statusCompleted, "24 度")
	want(t, a.chat("range-en", "set the ac to 22 degrees"), typeWorkflowResult, statusCompleted, "22 degrees")
	want(t, a.chat("range-en", "set the ac to 40 degrees"), typeAskSlot, statusWaitingSlot, "16 to 32", "40")
}
