package cabin

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// The planners in turn: template, heuristic with condition hints, and
// the single routed intent when no planner is needed.
func TestPlanner(t *testing.T) {
	app, err := New(context.Background(), Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		text    string
		source  string
		kind    string
		steps   string // intent[+condition][!confirm], space separated
		trigger bool
	}{
		{"打开车窗", "single", workflowSingle, "cabin_window_open", false},
		{"打开车窗然后把空调调到20度", "template:window_then_ac_sequence", workflowSequence, "cabin_window_open cabin_set_ac", true},
		{"查订单A123，如果没发货就取消", "template:query_then_cancel_if_pending", workflowConditional,
			"cs_query_order cs_cancel_order+s1.order_status:in:pending_payment,pending_shipment!", true},
		{"查一下订单B456，如果已经发货了就帮我转人工", "heuristic", workflowConditional,
			"cs_query_order cs_transfer_human+s1.order_status:in:shipped,delivered", true},
		{"先开空调再打开座椅加热", "heuristic", workflowSequence, "cabin_ac_on cabin_seat_heat_on", true},
		{"打开车窗，关闭天窗，播放音乐", "heuristic", workflowSequence, "cabin_window_open cabin_sunroof_close cabin_play_music", true},
		{"解锁车门", "single", workflowSingle, "cabin_door_unlock!", false},
	} {
		r, err := app.Chat(context.Background(), ChatRequest{SessionID: fmt.Sprint("p", i), Text: c.text})
		if err != nil {
			t.Fatal(err)
		}
		wf := r.Workflow
		if wf == nil {
			t.Errorf("%s: no workflow (%s)", c.text, r.Message)
			continue
		}
		var steps []string
		for _, st := range wf.Steps {
			s := st.Intent
			if cd := st.Condition; cd != nil {
				s += fmt.Sprintf("+%s.%s:%s:%s", cd.Step, cd.Field, cd.Operator, strings.Join(cd.Value, ","))
			}
			if st.RequiresConfirmation {
				s += "!"
			}
			steps = append(steps, s)
		}
		got := strings.Join(steps, " ")
		if wf.Source != c.source || wf.Kind != c.kind || got != c.steps || (r.Debug.Planner != nil) != c.trigger {
			t.Errorf("%s: %s %s [%s] planner %+v\nwant %s %s [%s]", c.text, wf.Source, wf.Kind, got, r.Debug.Planner, c.source, c.kind, c.steps)
		}
	}
}
