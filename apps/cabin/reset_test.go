package cabin

import (
	"context"
	"net/http"
	"testing"
)

// POST /api/v1/cabin/reset puts the simulated car, orders and hand-offs
// back as a new key finds them, so the README's examples hold again.
func TestReset(t *testing.T) {
	a := newAPI(t, Options{})
	a.chat("car-r", "打开车窗")
	if _, err := a.app.store.UpdateOrder(context.Background(), "A123", func(o *Order) error { o.Status = "cancelled"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := a.app.store.AddHandoff(context.Background(), handoff{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	var v Vehicle
	if a.do("GET", "/api/v1/cabin/vehicles/car-r", nil, &v); v.Windows["driver"] == 0 {
		t.Fatalf("before the reset: windows %v, want open", v.Windows)
	}
	var out map[string]bool
	if code := a.do("POST", "/api/v1/cabin/reset", nil, &out); code != http.StatusOK || !out["reset"] {
		t.Fatalf("reset: HTTP %d %v", code, out)
	}
	v = Vehicle{}
	if a.do("GET", "/api/v1/cabin/vehicles/car-r", nil, &v); v.Windows["driver"] != 0 {
		t.Errorf("after the reset: windows %v, want closed", v.Windows)
	}
	var o Order
	if a.do("GET", "/api/v1/cabin/orders/A123", nil, &o); o.Status != "pending_shipment" {
		t.Errorf("after the reset: order A123 %q, want pending_shipment", o.Status)
	}
	var hs struct{ Handoffs []handoff }
	if a.do("GET", "/api/v1/cabin/handoffs", nil, &hs); len(hs.Handoffs) != 0 {
		t.Errorf("after the reset: %d hand-offs, want none", len(hs.Handoffs))
	}
}
