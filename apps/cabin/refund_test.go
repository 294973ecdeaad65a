package cabin

import "testing"

// TestRefund: a refund question is answered from the order's state, and
// a yes carries the refund out: an order not shipped is cancelled and
// refunded, a delivered one gets a return opened with a person, one on
// its way or not paid for is refused with the reason.
func TestRefund(t *testing.T) {
	a := newAPI(t, Options{})
	want(t, a.chat("r1", "我要退款，订单A123"), typeAskConfirmation, statusWaitingConfirmation, "A123", "199", "取消")
	if a.order("A123").Status != orderPendingShipment {
		t.Fatal("asking changed the order")
	}
	want(t, a.chat("r1", "好的"), typeWorkflowResult, statusCompleted, "199")
	if got := a.order("A123").Status; got != orderCancelled {
		t.Errorf("A123 is %s after the refund, want cancelled", got)
	}

	want(t, a.chat("r2", "订单C789能退款吗"), typeAskConfirmation, statusWaitingConfirmation, "签收", "退货")
	want(t, a.chat("r2", "确认"), typeWorkflowResult, statusCompleted, "退货退款申请")
	if hs := get[struct{ Handoffs []handoff }](a, "/api/v1/cabin/handoffs").Handoffs; len(hs) != 1 || hs[0].OrderID != "C789" {
		t.Errorf("hand-offs %+v, want one for C789", hs)
	}

	want(t, a.chat("r3", "can I get a refund for order B456"), typeWorkflowResult, statusFailed, "shipped")
	want(t, a.chat("r4", "订单D234可以退款吗"), typeWorkflowResult, statusFailed, "没有付款")
	if got := a.order("D234").Status; got != orderPendingPayment {
		t.Errorf("D234 is %s, want untouched", got)
	}
}
