package cabin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/loomkit/loom/tool"
)

// Order statuses.
const (
	orderPendingPayment  = "pending_payment"
	orderPendingShipment = "pending_shipment"
	orderShipped         = "shipped"
	orderDelivered       = "delivered"
	orderCancelled       = "cancelled"
)

// Order is an order of the simulated order service.
type Order struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Item      string     `json:"item"`
	Amount    float64    `json:"amount"`
	Status    string     `json:"status"`
	Logistics *Logistics `json:"logistics,omitempty"`
	Created   time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Logistics is where a shipped order's parcel is.
type Logistics struct {
	Carrier    string `json:"carrier"`
	TrackingNo string `json:"tracking_no"`
	Status     string `json:"status"` // in_transit, out_for_delivery, delivered
	Location   string `json:"location"`
}

// handoff is a conversation handed to a person.
type handoff struct {
	ID      int64     `json:"id"`
	UserID  string    `json:"user_id"`
	Session string    `json:"session_id"`
	OrderID string    `json:"order_id,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Queue   int       `json:"queue_position"`
	Created time.Time `json:"created_at"`
}

// demoUser owns the sample orders.
const demoUser = "demo"

// sampleOrders are the orders a new store holds: one in every status.
func sampleOrders(now time.Time) []Order {
	day := 24 * time.Hour
	return []Order{
		{ID: "A123", UserID: demoUser, Item: "蓝牙耳机", Amount: 199, Status: orderPendingShipment, Created: now.Add(-day), UpdatedAt: now},
		{ID: "B456", UserID: demoUser, Item: "车载充电器", Amount: 89, Status: orderShipped, Created: now.Add(-3 * day), UpdatedAt: now,
			Logistics: &Logistics{Carrier: "顺丰速运", TrackingNo: "SF1234567890", Status: "in_transit", Location: "上海转运中心"}},
		{ID: "C789", UserID: demoUser, Item: "座椅靠垫", Amount: 159, Status: orderDelivered, Created: now.Add(-9 * day), UpdatedAt: now,
			Logistics: &Logistics{Carrier: "京东物流", TrackingNo: "JD0098765432", Status: "delivered", Location: "已签收"}},
		{ID: "D234", UserID: demoUser, Item: "行车记录仪", Amount: 399, Status: orderPendingPayment, Created: now.Add(-2 * time.Hour), UpdatedAt: now},
		{ID: "E567", UserID: demoUser, Item: "脚垫", Amount: 129, Status: orderCancelled, Created: now.Add(-5 * day), UpdatedAt: now},
	}
}

// cancellable are the statuses an order can be cancelled in.
var cancellable = []string{orderPendingPayment, orderPendingShipment}

// orderTools returns the simulated order service's tools
// (plugin.order.*, plugin.logistics.query, plugin.service.transfer_human,
// see ToolName), over store. The queries and the cancel check read; the
// cancel and the hand-off to a person write.
func orderTools(store orderStore) []tool.Tool {
	with := func(f func(context.Context, orderStore, Args) (Result, error)) func(context.Context, Args) (Result, error) {
		return func(ctx context.Context, args Args) (Result, error) { return f(ctx, store, args) }
	}
	return []tool.Tool{
		newTool("plugin.order.query", "look up the order in the order_id slot", tool.Read, with(queryOrder)),
		newTool("plugin.logistics.query", "track the parcel of the order in the order_id slot", tool.Read, with(queryLogistics)),
		newTool("plugin.order.cancel", "cancel the order in the order_id slot, refunding a paid one", tool.Write, with(cancelOrder)),
		newTool("plugin.order.cancel.check", "tell whether the order in the order_id slot can be cancelled, without cancelling it", tool.Read, with(checkCancel)),
		newTool("plugin.order.refund", "refund the order in the order_id slot: cancel it before it ships, or open a return once delivered", tool.Write, with(refundOrder)),
		newTool("plugin.order.refund.check", "tell whether and how the order in the order_id slot can be refunded, without refunding it", tool.Read, with(checkRefund)),
		newTool("plugin.service.transfer_human", "hand the conversation to a person, about the order_id slot for the reason slot", tool.Write, with(transferHuman)),
	}
}

// orderData is what every order result carries.
func orderData(o Order) map[string]any {
	return map[string]any{"order_id": o.ID, "order_status": o.Status, "item": o.Item, "amount": o.Amount}
}

// refused turns a refusal into a failed Result with the order id.
func refused(reason, message, orderID string) Result {
	return Result{Success: false, Message: message, Data: map[string]any{"reason": reason, "order_id": orderID}}
}

func queryOrder(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	o, err := store.Order(ctx, id)
	if errors.Is(err, errNotFound) {
		return refused("order_not_found", "order "+id+" not found", id), nil
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Success: true, Message: "order " + o.ID + ": " + o.Status, Data: orderData(o)}, nil
}

func queryLogistics(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	o, err := store.Order(ctx, id)
	switch {
	case errors.Is(err, errNotFound):
		return refused("order_not_found", "order "+id+" not found", id), nil
	case err != nil:
		return Result{}, err
	case o.Logistics == nil:
		r := refused("not_shipped", "order "+id+" has not shipped", id)
		r.Data["order_status"] = o.Status
		return r, nil
	}
	d := orderData(o)
	d["carrier"], d["tracking_no"], d["logistics_status"], d["location"] = o.Logistics.Carrier, o.Logistics.TrackingNo, o.Logistics.Status, o.Logistics.Location
	return Result{Success: true, Message: "order " + o.ID + ": " + o.Logistics.Status, Data: d}, nil
}

// currency is the currency of order amounts and refunds.
const currency = "CNY"

// cancelRefusal says why o cannot be cancelled, or nil: an order can be
// cancelled before it ships, not once it has shipped, was delivered or is
// cancelled already.
func cancelRefusal(o *Order) error {
	switch {
	case slices.Contains(cancellable, o.Status):
		return nil
	case o.Status == orderShipped:
		return &refusal{"already_shipped", "order " + o.ID + " has shipped"}
	case o.Status == orderDelivered:
		return &refusal{"already_delivered", "order " + o.ID + " was delivered"}
	}
	return &refusal{"already_cancelled", "order " + o.ID + " is cancelled already"}
}

// cancelResult is the result of a cancel or its check: the refusal in
// err, or success with the order and message.
func cancelResult(o Order, id string, err error, message string) (Result, error) {
	var r *refusal
	switch {
	case errors.Is(err, errNotFound):
		return refused("order_not_found", "order "+id+" not found", id), nil
	case errors.As(err, &r):
		return refused(r.reason, r.message, id), nil
	case err != nil:
		return Result{}, err
	}
	return Result{Success: true, Message: message, Data: orderData(o)}, nil
}

// checkCancel tells whether an order can be cancelled, without
// cancelling it: the check asked before the cancel's confirmation.
func checkCancel(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	o, err := store.Order(ctx, id)
	if err == nil {
		err = cancelRefusal(&o)
	}
	return cancelResult(o, id, err, "order "+id+" can be cancelled")
}

// cancelOrder cancels an order that has not shipped; one that cannot be
// cancelled is refused with the reason. An order that was paid for
// (pending shipment) is refunded: the result says refund and currency.
func cancelOrder(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	paid := false
	o, err := store.UpdateOrder(ctx, id, func(o *Order) error {
		if err := cancelRefusal(o); err != nil {
			return err
		}
		paid = o.Status != orderPendingPayment
		o.Status = orderCancelled
		return nil
	})
	res, err := cancelResult(o, id, err, "order "+id+" cancelled")
	if err == nil && res.Success && paid {
		res.Data["refund"], res.Data["currency"] = o.Amount, currency
	}
	return res, err
}

func transferHuman(ctx context.Context, store orderStore, args Args) (Result, error) {
	h, err := store.AddHandoff(ctx, handoff{UserID: args.User, Session: args.Session, OrderID: args.Slots["order_id"], Reason: args.Slots["reason"]})
	if err != nil {
		return Result{}, err
	}
	return Result{Success: true, Message: "handed off", Data: map[string]any{"ticket_id": h.ID, "queue_position": h.Queue}}, nil
}

// refundRefusal says why o cannot be refunded, or nil: an order paid for
// and not shipped is refunded by cancelling it, a delivered one by a
// return; one not paid for, on its way or cancelled has nothing to refund
// now.
func refundRefusal(o *Order) error {
	switch o.Status {
	case orderPendingShipment, orderDelivered:
		return nil
	case orderPendingPayment:
		return &refusal{"not_paid", "order " + o.ID + " is not paid for"}
	case orderShipped:
		return &refusal{"refund_shipped", "order " + o.ID + " is on its way"}
	}
	return &refusal{"refund_cancelled", "order " + o.ID + " is cancelled already"}
}

// refundData is what a refund and its check tell: the order, the amount
// and currency, and for a delivered order that a return comes first.
func refundData(o Order) map[string]any {
	d := orderData(o)
	d["refund"], d["currency"] = o.Amount, currency
	if o.Status == orderDelivered {
		d["return"] = true
	}
	return d
}

// checkRefund tells whether and how an order can be refunded, without
// refunding it: the check asked before the refund's confirmation, and
// the answer to "订单C789能退款吗".
func checkRefund(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	o, err := store.Order(ctx, id)
	if err == nil {
		err = refundRefusal(&o)
	}
	res, err := cancelResult(o, id, err, "order "+id+" can be refunded")
	if err == nil && res.Success {
		res.Data = refundData(o)
	}
	return res, err
}

// refundOrder refunds an order: one not shipped is cancelled and its
// amount refunded; for a delivered one a return and refund is opened with
// a person, who arranges the return.
func refundOrder(ctx context.Context, store orderStore, args Args) (Result, error) {
	id := args.Slots["order_id"]
	var before Order
	o, err := store.UpdateOrder(ctx, id, func(o *Order) error {
		if err := refundRefusal(o); err != nil {
			return err
		}
		before = *o
		if o.Status == orderPendingShipment {
			o.Status = orderCancelled
		}
		return nil
	})
	res, err := cancelResult(o, id, err, "order "+id+" refunded")
	if err != nil || !res.Success {
		return res, err
	}
	res.Data = refundData(before)
	res.Data["order_status"] = o.Status
	if before.Status == orderDelivered {
		h, err := store.AddHandoff(ctx, handoff{UserID: args.User, Session: args.Session, OrderID: id, Reason: "return and refund"})
		if err != nil {
			return Result{}, fmt.Errorf("open a return for order %s: %w", id, err)
		}
		res.Data["ticket_id"], res.Data["queue_position"] = h.ID, h.Queue
		res.Message = "return and refund opened for order " + id
	}
	return res, nil
}
