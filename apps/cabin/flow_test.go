package cabin

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/intent"
)

// turn is one request of a flow and what its reply must be.
type turn struct {
	text string       // a chat turn, unless fill is set
	fill *fillRequest // a fill-slots turn (its SessionID is filled in)
	typ  string
	stat string
	says []string // parts of the message
}

func chatTurn(text, typ, stat string, says ...string) turn {
	return turn{text: text, typ: typ, stat: stat, says: says}
}

func fillTurn(req fillRequest, typ, stat string, says ...string) turn {
	return turn{fill: &req, typ: typ, stat: stat, says: says}
}

func yes() *bool { b := true; return &b }

// flows are the seed's sequences (§29), every row of its branch matrix
// (§27.1) and the other behaviours of §9–§22, end to end over HTTP on a
// SQLite file. Each runs on a server of its own; check looks at the
// simulated backends through the API afterwards.
var flows = []struct {
	name  string
	turns []turn
	check func(t *testing.T, a *api, session string)
}{
	// §29.1
	{"29.1 single command", []turn{chatTurn("打开车窗", typeWorkflowResult, statusCompleted, "已打开车窗")},
		func(t *testing.T, a *api, s string) {
			if v := a.vehicle(s); v.Windows["driver"] != 100 || v.Windows["rear_right"] != 100 {
				t.Errorf("windows %v, want all open", v.Windows)
			}
		}},
	// §29.2, answered by fill-slots and by the next chat turn
	{"29.2 conditional, confirmed by fill-slots", []turn{
		chatTurn("查订单A123，如果没发货就取消", typeAskConfirmation, statusWaitingConfirmation, "待发货", "确认要取消订单 A123"),
		fillTurn(fillRequest{Confirm: yes()}, typeWorkflowResult, statusCompleted, "订单 A123 已取消", "199 元"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("A123"); o.Status != orderCancelled {
			t.Errorf("A123 is %s, want cancelled", o.Status)
		}
	}},
	{"29.2 conditional, confirmed in chat", []turn{
		chatTurn("查一下订单A123，要是还没发货就帮我取消", typeAskConfirmation, statusWaitingConfirmation, "A123"),
		chatTurn("确认", typeWorkflowResult, statusCompleted, "已取消"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("A123"); o.Status != orderCancelled {
			t.Errorf("A123 is %s, want cancelled", o.Status)
		}
	}},
	{"29.2 conditional: a question or a hedge is asked again, a refusal dressed as a yes declines", []turn{
		chatTurn("查一下订单A123，要是还没发货就帮我取消", typeAskConfirmation, statusWaitingConfirmation, "A123"),
		chatTurn("可以吗？", typeAskConfirmation, statusWaitingConfirmation, "确认要取消订单吗"),
		chatTurn("好像可以", typeAskConfirmation, statusWaitingConfirmation, "确认要取消订单吗"),
		chatTurn("对不起，我不同意", typeWorkflowResult, statusCompleted, "不取消订单"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("A123"); o.Status == orderCancelled {
			t.Errorf("A123 is cancelled after a refusal")
		}
	}},
	{"29.2 conditional, confirmed with the question's own words", []turn{
		chatTurn("查一下订单A123，要是还没发货就帮我取消", typeAskConfirmation, statusWaitingConfirmation, "A123"),
		chatTurn("没问题，确认取消", typeWorkflowResult, statusCompleted, "已取消"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("A123"); o.Status != orderCancelled {
			t.Errorf("A123 is %s, want cancelled", o.Status)
		}
	}},
	{"29.2 conditional, condition false", []turn{
		chatTurn("查订单B456，如果没发货就取消", typeWorkflowResult, statusCompleted, "B456", "已发货", "没有取消"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("B456"); o.Status != orderShipped {
			t.Errorf("B456 is %s, want shipped", o.Status)
		}
		wf := a.session(s).Session.Workflow
		if wf == nil || len(wf.Steps) != 2 || wf.Steps[1].Status != stepSkipped || wf.Kind != workflowConditional {
			t.Errorf("workflow %+v, want the cancel step skipped", wf)
		}
	}},
	// §29.3
	{"29.3 slot filling by fill-slots", []turn{
		chatTurn("导航", typeAskSlot, statusWaitingSlot, "去哪里"),
		fillTurn(fillRequest{Text: "去公司"}, typeWorkflowResult, statusCompleted, "开始导航去公司"),
	}, func(t *testing.T, a *api, s string) {
		if n := a.vehicle(s).Navigation; !n.Active || n.Destination != "公司" {
			t.Errorf("navigation %+v, want to 公司", n)
		}
	}},
	{"29.3 slot filling by slot value", []turn{
		chatTurn("帮我导航一下", typeAskSlot, statusWaitingSlot, "去哪里"),
		fillTurn(fillRequest{Slots: map[string]string{"destination": "虹桥机场"}}, typeWorkflowResult, statusCompleted, "虹桥机场"),
	}, nil},
	{"29.3 slot filling by the next chat turn", []turn{
		chatTurn("导航", typeAskSlot, statusWaitingSlot),
		chatTurn("公司", typeWorkflowResult, statusCompleted, "开始导航去公司"),
	}, nil},
	// §27.1, row by row
	{"27.1 stop with an active task", []turn{
		chatTurn("导航", typeAskSlot, statusWaitingSlot),
		chatTurn("算了", typeText, statusStopped, "已停止"),
	}, func(t *testing.T, a *api, s string) {
		if info := a.session(s); info.Pending != nil || info.Session.Status != statusStopped {
			t.Errorf("after stop: status %s, pending %v", info.Session.Status, info.Pending)
		}
	}},
	{"27.1 social", []turn{
		chatTurn("你好", typeText, statusSocial, "座舱助手"),
		chatTurn("谢谢", typeText, statusSocial, "不"),
		chatTurn("你能做什么", typeText, statusSocial, "导航"),
	}, nil},
	{"27.1 single command, high confidence", []turn{chatTurn("把空调调到22度", typeWorkflowResult, statusCompleted, "22 度")},
		func(t *testing.T, a *api, s string) {
			if ac := a.vehicle(s).AC; !ac.On || ac.Temperature != 22 {
				t.Errorf("ac %+v, want on at 22", ac)
			}
		}},
	{"27.1 single command, missing slot", []turn{
		chatTurn("查订单", typeAskSlot, statusWaitingSlot, "订单号"),
		fillTurn(fillRequest{Slots: map[string]string{"order_id": "c789"}}, typeWorkflowResult, statusCompleted, "C789", "已签收"),
	}, nil},
	{"27.1 multi-command", []turn{chatTurn("打开车窗然后把空调调到20度", typeWorkflowResult, statusCompleted, "车窗已经打开了", "空调也调到 20 度了")},
		func(t *testing.T, a *api, s string) {
			wf := a.session(s).Session.Workflow
			if wf == nil || wf.Source != "template:window_then_ac_sequence" || len(wf.Steps) != 2 {
				t.Errorf("workflow %+v, want the window_then_ac template", wf)
			}
		}},
	{"27.1 multi-command asking a slot", []turn{
		chatTurn("打开车窗，然后导航", typeAskSlot, statusWaitingSlot, "已打开车窗", "去哪里"),
		chatTurn("去机场", typeWorkflowResult, statusCompleted, "开始导航去机场"),
	}, nil},
	{"27.1 local ambiguity", []turn{chatTurn("空调", typeClarify, statusClarify, "打开空调", "关闭空调", "还是")},
		func(t *testing.T, a *api, s string) { decided(t, a, "空调", intent.Clarify) }},
	{"27.1 route to cloud becomes clarify", []turn{
		chatTurn("起雾了", typeClarify, statusClarify, "后挡除雾"),
		chatTurn("是的", typeWorkflowResult, statusCompleted, "后挡除雾已打开"),
	}, func(t *testing.T, a *api, s string) { decided(t, a, "起雾了", intent.RouteToCloud) }},
	{"27.1 unknown", []turn{chatTurn("今天股市怎么样", typeReject, statusRejected, "帮不了")}, nil},
	{"27.1 fill-slots without a session", []turn{fillTurn(fillRequest{SessionID: "nobody", Slots: map[string]string{"destination": "公司"}}, typeFallback, statusFallback, "没有找到")}, nil},
	{"27.1 fill-slots without a current intent", []turn{
		chatTurn("你好", typeText, statusSocial),
		fillTurn(fillRequest{Slots: map[string]string{"destination": "公司"}}, typeFallback, statusFallback),
	}, nil},
	// §10.4, §9.2, §21, §11, §19
	{"social turn with a pending task", []turn{
		chatTurn("导航", typeAskSlot, statusWaitingSlot),
		chatTurn("谢谢", typeText, statusSocial, "不客气", "导航还需要你告诉我目的地"),
		chatTurn("去机场", typeWorkflowResult, statusCompleted, "机场"),
	}, nil},
	{"stop in the middle of a workflow", []turn{
		chatTurn("打开车窗然后导航", typeAskSlot, statusWaitingSlot, "已打开车窗"),
		chatTurn("算了", typeText, statusStopped),
	}, func(t *testing.T, a *api, s string) {
		v := a.vehicle(s)
		wf := a.session(s).Session.Workflow
		if v.Windows["driver"] != 100 || v.Navigation.Active || wf.Steps[0].Status != stepDone || wf.Steps[1].Status != stepCancelled {
			t.Errorf("windows %v navigation %+v steps %+v", v.Windows, v.Navigation, wf.Steps)
		}
	}},
	{"high risk declined", []turn{
		chatTurn("解锁车门", typeAskConfirmation, statusWaitingConfirmation, "确认要解锁"),
		chatTurn("不要", typeWorkflowResult, statusCompleted, "不解锁车门"),
	}, func(t *testing.T, a *api, s string) {
		if !a.vehicle(s).DoorsLocked {
			t.Error("doors unlocked after no")
		}
	}},
	{"high risk confirmed, unclear answer first", []turn{
		chatTurn("解锁车门", typeAskConfirmation, statusWaitingConfirmation),
		chatTurn("嗯？什么意思", typeAskConfirmation, statusWaitingConfirmation, "没听清"),
		chatTurn("确定", typeWorkflowResult, statusCompleted, "车门已解锁"),
	}, func(t *testing.T, a *api, s string) {
		if a.vehicle(s).DoorsLocked {
			t.Error("doors still locked after yes")
		}
	}},
	{"cancel refused by the order service, without asking first", []turn{
		chatTurn("取消订单B456", typeWorkflowResult, statusFailed, "订单 B456 已经发货，不能直接取消了，需要的话我可以帮你转人工。"),
	}, func(t *testing.T, a *api, s string) {
		if o := a.order("B456"); o.Status != orderShipped {
			t.Errorf("B456 is %s", o.Status)
		}
	}},
	{"follow-up rewrite", []turn{
		chatTurn("打开空调", typeWorkflowResult, statusCompleted, "24 度"),
		chatTurn("再低一点", typeWorkflowResult, statusCompleted, "23 度"),
	}, func(t *testing.T, a *api, s string) {
		info := a.session(s)
		if info.Reply.Debug.RewriteRule != "ac_cooler" || a.vehicle(s).AC.Temperature != 23 {
			t.Errorf("rewrite %q, ac %+v", info.Reply.Debug.RewriteRule, a.vehicle(s).AC)
		}
	}},
	{"a new request replaces a pending one", []turn{
		chatTurn("导航", typeAskSlot, statusWaitingSlot),
		chatTurn("打开天窗", typeWorkflowResult, statusCompleted, "天窗已打开"),
	}, func(t *testing.T, a *api, s string) {
		if info := a.session(s); info.Pending != nil || info.Session.Intent != "cabin_sunroof_open" {
			t.Errorf("pending %v intent %s", info.Pending, info.Session.Intent)
		}
	}},
	{"an unclear slot answer is asked again", []turn{
		chatTurn("查一下物流", typeAskSlot, statusWaitingSlot),
		chatTurn("好的", typeAskSlot, statusWaitingSlot, "没听明白"),
		chatTurn("B456", typeWorkflowResult, statusCompleted, "顺丰速运", "SF1234567890"),
	}, nil},
	{"hand-off to a person", []turn{chatTurn("帮我转人工客服", typeWorkflowResult, statusCompleted, "工单号 1")},
		func(t *testing.T, a *api, s string) {
			var hs struct{ Handoffs []handoff }
			a.do("GET", "/api/v1/cabin/handoffs", nil, &hs)
			if len(hs.Handoffs) != 1 || hs.Handoffs[0].Session != s {
				t.Errorf("hand-offs %+v", hs.Handoffs)
			}
		}},
	{"media", []turn{
		chatTurn("播放周杰伦的晴天", typeWorkflowResult, statusCompleted, "晴天 - 周杰伦"),
		chatTurn("换一首", typeWorkflowResult, statusCompleted, "稻香"),
		chatTurn("声音大一点", typeWorkflowResult, statusCompleted, "15"),
	}, nil},
	{"three commands", []turn{chatTurn("打开座椅加热，关闭天窗，再打开雨刷", typeWorkflowResult, statusCompleted, "座椅加热已经打开了", "天窗也关上了", "雨刷也打开了")},
		func(t *testing.T, a *api, s string) {
			v := a.vehicle(s)
			if v.SeatHeat["driver"] != 2 || !v.Wipers.On {
				t.Errorf("seat heat %v wipers %+v", v.SeatHeat, v.Wipers)
			}
		}},
}

func TestFlows(t *testing.T) {
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			a := newAPI(t, Options{})
			session := strings.ReplaceAll(f.name, " ", "-")
			for i, tu := range f.turns {
				var r Reply
				if tu.fill != nil {
					req := *tu.fill
					req.SessionID = cmp.Or(req.SessionID, session)
					r = a.fill(req)
				} else {
					r = a.chat(session, tu.text)
				}
				if t.Failed() {
					return
				}
				want(t, r, tu.typ, tu.stat, tu.says...)
				checkReply(t, i, r)
			}
			if f.check != nil && !t.Failed() {
				f.check(t, a, session)
			}
		})
	}
}

// decided checks the local decision on text, on a session of its own.
func decided(t *testing.T, a *api, text string, d intent.Decision) {
	t.Helper()
	if r := a.chat("probe", text); r.Debug.Route == nil || r.Debug.Route.Decision != d {
		t.Errorf("%q: route %+v, want decision %s", text, r.Debug.Route, d)
	}
}

// checkReply checks what every reply carries: the routing debug and the
// latency breakdown.
func checkReply(t *testing.T, i int, r Reply) {
	t.Helper()
	if r.Debug.Decision == "" {
		t.Errorf("turn %d: no decision in the routing debug", i+1)
	}
	if r.Type != typeFallback && r.Debug.Route == nil && r.Debug.Continuation == "" && r.Debug.Social == "" && !r.Debug.Stop {
		t.Errorf("turn %d: %s reply without a route, stop, social reason or continuation", i+1, r.Type)
	}
	if r.Latency.Total <= 0 || r.Latency.FirstResponse <= 0 {
		t.Errorf("turn %d: latency %+v", i+1, r.Latency)
	}
	if r.Type != typeFallback && r.Latency.SessionGetOrCreate <= 0 {
		t.Errorf("turn %d: no session_get_or_create time", i+1)
	}
	if r.Debug.Route != nil && (len(r.Debug.Route.Stages) != 3 || r.Latency.Route <= 0 || len(r.Latency.Stages) != 3) {
		t.Errorf("turn %d: route stages %d, route %.3fms, stage times %v", i+1, len(r.Debug.Route.Stages), r.Latency.Route, r.Latency.Stages)
	}
	if slices.Contains([]string{typeWorkflowResult, typeAskSlot, typeAskConfirmation}, r.Type) && r.Workflow == nil {
		t.Errorf("turn %d: %s without a workflow", i+1, r.Type)
	}
}
