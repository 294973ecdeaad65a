package cabin

import (
	"fmt"
	"testing"
)

// said is a whole reply: its type, status and message.
type said struct{ typ, status, message string }

// conversation chats turns in one session and compares every reply
// whole.
func conversation(t *testing.T, a *api, session string, turns ...struct {
	text string
	want said
}) []Reply {
	t.Helper()
	var out []Reply
	for _, tu := range turns {
		r := a.chat(session, tu.text)
		if got := (said{r.Type, r.Status, r.Message}); got != tu.want {
			t.Errorf("%q:\n got %+v\nwant %+v", tu.text, got, tu.want)
		}
		out = append(out, r)
	}
	return out
}

type line = struct {
	text string
	want said
}

func done(msg string) said { return said{typeWorkflowResult, statusCompleted, msg} }

// failed is a finished workflow none of whose steps could be done.
func failed(msg string) said { return said{typeWorkflowResult, statusFailed, msg} }

func asks(msg string) said { return said{typeAskConfirmation, statusWaitingConfirmation, msg} }

// A workflow whose condition skipped a step tells the checked state once.
func TestReplyNoRepeatedClauses(t *testing.T) {
	zh, en := newAPI(t, Options{}), newAPI(t, Options{Locale: localeEnglish})
	conversation(t, zh, "shipped", line{"查订单B456，如果没发货就取消", done("订单 B456 当前已发货，没有取消。")})
	conversation(t, zh, "cancelled", line{"查订单E567，如果没发货就取消", done("订单 E567 当前已取消，没有取消。")})
	conversation(t, en, "shipped", line{"check order B456 and cancel it if it hasn't shipped", done("Order B456 is shipped, so I didn't cancel it.")})
	conversation(t, en, "pending", line{"check order A123 and cancel it if it hasn't shipped", asks("Order A123 (Bluetooth headphones) is waiting to ship. Shall I cancel order A123?")})
}

// How far to open a window or the sunroof is a slot: half, a percentage,
// a little.
func TestReplyOpening(t *testing.T) {
	zh, en := newAPI(t, Options{}), newAPI(t, Options{Locale: localeEnglish})
	for i, c := range []struct {
		a       *api
		text    string
		want    said
		window  int  // the driver's window, or -1
		sunroof int  // or -1
		next    bool // in the session of the case before
	}{
		{zh, "把车窗打开一半", done("好的，已把车窗打开到 50%。"), 50, -1, false},
		{zh, "把主驾车窗打开百分之三十", done("好的，已把主驾车窗打开到 30%。"), 30, -1, false},
		{zh, "天窗打开一点", done("好的，天窗已打开到 20%。"), -1, 20, false},
		{zh, "打开车窗", done("好的，已打开车窗。"), 100, -1, false},
		{zh, "把车窗打开一半", done("好的，已把车窗打开到 50%。"), 50, -1, false},
		{zh, "打开车窗", done("好的，已打开车窗。"), 100, -1, true}, // how far is not carried over
		{en, "open the sunroof 30%", done("The sunroof is 30% open."), -1, 30, false},
		{en, "open the sunroof a little", done("The sunroof is 20% open."), -1, 20, false},
		{en, "open the window halfway", done("Opened the windows to 50%."), 50, -1, false},
		{en, "open the windows", done("Opened the windows."), 100, -1, true},
	} {
		session := fmt.Sprint("open-", i)
		if c.next {
			session = fmt.Sprint("open-", i-1)
		}
		conversation(t, c.a, session, line{c.text, c.want})
		v := c.a.vehicle(session)
		if c.window >= 0 && v.Windows["driver"] != c.window {
			t.Errorf("%q: driver's window at %d%%, want %d%%", c.text, v.Windows["driver"], c.window)
		}
		if c.sunroof >= 0 && v.Sunroof != c.sunroof {
			t.Errorf("%q: sunroof at %d%%, want %d%%", c.text, v.Sunroof, c.sunroof)
		}
	}
}

// An order that cannot be cancelled is refused at once, with the reason,
// and nobody is asked to confirm; a refund is promised only for a paid
// order, with its currency.
func TestReplyCancel(t *testing.T) {
	zh, en := newAPI(t, Options{}), newAPI(t, Options{Locale: localeEnglish})
	for _, c := range []struct {
		a       *api
		session string
		lines   []line
	}{
		{zh, "delivered", []line{{"取消订单C789", failed("订单 C789 已经签收，不能取消了，可以申请售后。")}}},
		{zh, "cancelled", []line{{"取消订单E567", failed("订单 E567 之前已经取消过了。")}}},
		{zh, "unknown", []line{{"取消订单Z999", failed("没有找到订单 Z999，请核对一下订单号。")}}},
		{zh, "unpaid", []line{{"取消订单D234", asks("确认要取消订单 D234 吗？")}, {"确认", done("订单 D234 已取消。")}}},
		{zh, "paid", []line{{"取消订单A123", asks("确认要取消订单 A123 吗？")}, {"确认", done("订单 A123 已取消，199 元将原路退回。")}}},
		{en, "delivered", []line{{"cancel order C789", failed("Order C789 was delivered, so it can't be cancelled; you can ask for a return.")}}},
		{en, "cancelled", []line{{"cancel order E567", failed("Order E567 was cancelled already.")}}},
		{en, "unpaid", []line{{"cancel order D234", asks("Shall I cancel order D234?")}, {"yes", done("Order D234 is cancelled.")}}},
		{en, "paid", []line{{"cancel order A123", asks("Shall I cancel order A123?")}, {"yes", done("Order A123 is cancelled; CNY 199 will be refunded.")}}},
	} {
		conversation(t, c.a, c.session, c.lines...)
	}
	for _, c := range []struct {
		a    *api
		id   string
		want string
	}{{zh, "C789", orderDelivered}, {zh, "D234", orderCancelled}, {en, "E567", orderCancelled}, {en, "A123", orderCancelled}} {
		if o := c.a.order(c.id); o.Status != c.want {
			t.Errorf("%s is %s, want %s", c.id, o.Status, c.want)
		}
	}
}

// Small talk after a finished task is its own reply: it carries neither
// the task's intent nor its workflow.
func TestReplySmallTalk(t *testing.T) {
	zh, en := newAPI(t, Options{}), newAPI(t, Options{Locale: localeEnglish})
	for _, c := range []struct {
		a           *api
		task, hello string
		done, want  said
	}{
		{zh, "打开空调", "你好", done("好的，空调已打开，当前 24 度。"), said{typeText, statusSocial, "你好！我是你的座舱助手，可以帮你开车窗、调空调、导航、放音乐，也能查订单。"}},
		{en, "turn on the ac", "hello", done("The air conditioning is on, at 24 degrees."), said{typeText, statusSocial, "Hi! I'm your in-car assistant: windows, climate, navigation, music, and your orders."}},
	} {
		rs := conversation(t, c.a, "chat", line{c.task, c.done}, line{c.hello, c.want})
		if r := rs[1]; r.Intent != "" || r.Slots != nil || r.Workflow != nil || r.PendingSlots != nil {
			t.Errorf("%q after %q carries intent %q, slots %v, workflow %+v", c.hello, c.task, r.Intent, r.Slots, r.Workflow)
		}
	}
}
