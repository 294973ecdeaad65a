package cabin

import "testing"

// TestUnlockConfirmed: opening or unlocking the doors says what it will
// do and waits for a yes; doors already unlocked are not asked about and
// no reply says they were unlocked.
func TestUnlockConfirmed(t *testing.T) {
	a := newAPI(t, Options{})
	want(t, a.chat("d", "打开车门"), typeAskConfirmation, statusWaitingConfirmation, "解锁")
	if !a.vehicle("d").DoorsLocked {
		t.Fatal("the doors were unlocked before the yes")
	}
	want(t, a.chat("d", "确认"), typeWorkflowResult, statusCompleted, "解锁")
	if a.vehicle("d").DoorsLocked {
		t.Fatal("the doors are still locked after the yes")
	}
	want(t, a.chat("d", "unlock the doors"), typeWorkflowResult, statusFailed, "already unlocked")
}

// TestClarifyAnswered: a reply to "open or close?" picks an option by
// its words, its label or its place; a request of its own is one; a yes
// picks neither and the question is asked again.
func TestClarifyAnswered(t *testing.T) {
	a := newAPI(t, Options{})
	for _, c := range []struct {
		first, reply, ran string
	}{
		{"车窗", "打开", "cabin_window_open"},
		{"window", "open it", "cabin_window_open"},
		{"空调", "关掉吧", "cabin_ac_off"},
		{"车窗", "第二个", "cabin_window_close"},
		{"车窗", "打开空调", "cabin_ac_on"},
	} {
		s := c.first + "/" + c.reply
		want(t, a.chat(s, c.first), typeClarify, statusClarify)
		r := a.chat(s, c.reply)
		if r.Type != typeWorkflowResult || len(r.Workflow.Steps) != 1 || r.Workflow.Steps[0].Intent != c.ran {
			t.Errorf("%s: %s/%s %q, want %s", s, r.Type, r.Status, r.Message, c.ran)
		}
	}
	want(t, a.chat("door", "车门"), typeClarify, statusClarify)
	want(t, a.chat("door", "是的"), typeClarify, statusClarify, "锁车门", "解锁车门")
}
