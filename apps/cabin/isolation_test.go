package cabin

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// TestKeysKeepTheirData checks every cabin endpoint with two API keys: B
// can neither see nor change A's vehicle, orders, hand-offs or sessions,
// through the cabin's endpoints or Loom's runs.
func TestKeysKeepTheirData(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { keysKeepTheirData(t, serveLoom(t, "key-a", "key-b")) })
	t.Run("postgres", func(t *testing.T) {
		keysKeepTheirData(t, serveLoomOn(t, storetest.PostgresURL(t), "key-a", "key-b"))
	})
}

func keysKeepTheirData(t *testing.T, a *api) {
	type orders struct{ Orders []Order }
	type handoffs struct{ Handoffs []handoff }
	// drive takes a turn in car-1, the default vehicle.
	drive := func(session, text string) Reply {
		var r Reply
		if code := a.do("POST", "/api/v1/agent/chat", ChatRequest{SessionID: session, Text: text}, &r); code != http.StatusOK {
			t.Fatalf("chat %q: HTTP %d", text, code)
		}
		return r
	}
	// A opens car-1's windows, cancels A123 and asks for a person.
	a.key = "key-a"
	want(t, drive("a-1", "打开车窗"), typeWorkflowResult, statusCompleted)
	want(t, a.chat("a-2", "取消订单A123"), typeAskConfirmation, statusWaitingConfirmation)
	want(t, a.fill(fillRequest{SessionID: "a-2", Confirm: yes()}), typeWorkflowResult, statusCompleted, "A123")
	want(t, a.chat("a-3", "帮我转人工客服"), typeWorkflowResult, statusCompleted)
	// And through Loom's chat completions: a run of A's opens the sunroof.
	if got := a.completion("a-4", "打开天窗"); !strings.Contains(got, "天窗") {
		t.Errorf("chat completion: %q", got)
	}

	// B sees its own car, its own sample orders and no hand-offs.
	a.key = "key-b"
	if v := a.vehicle(defaultVehicle); v.Windows["driver"] != 0 || v.Sunroof != 0 {
		t.Errorf("key-b sees key-a's car: %+v", v)
	}
	if o := a.order("A123"); o.Status != orderPendingShipment {
		t.Errorf("key-b's A123 is %s, want %s", o.Status, orderPendingShipment)
	}
	if l := get[orders](a, "/api/v1/cabin/orders"); len(l.Orders) != len(sampleOrders(time.Now())) {
		t.Errorf("key-b's orders: %+v", l.Orders)
	}
	if h := get[handoffs](a, "/api/v1/cabin/handoffs"); len(h.Handoffs) != 0 {
		t.Errorf("key-b sees hand-offs %+v", h.Handoffs)
	}
	// Each key has its own session ids: B has no a-2, says so plainly,
	// and a fill-slots on it is the reply to a session with nothing to
	// fill, not an answer to A's question.
	var e struct{ Error httpError }
	if code := a.do("GET", "/api/v1/agent/sessions/a-2", nil, &e); code != http.StatusNotFound || e.Error.Code != "not_found" || e.Error.Message != "session a-2 not found" {
		t.Errorf("key-b reads a-2: HTTP %d %+v", code, e.Error)
	}
	want(t, a.fill(fillRequest{SessionID: "a-2", Confirm: yes()}), typeFallback, statusFallback)
	// B's own turns change B's data only.
	want(t, drive("b-1", "打开车窗"), typeWorkflowResult, statusCompleted)
	want(t, drive("b-1", "关闭车窗"), typeWorkflowResult, statusCompleted)
	want(t, a.chat("b-2", "取消订单D234"), typeAskConfirmation, statusWaitingConfirmation)
	want(t, a.fill(fillRequest{SessionID: "b-2", Confirm: yes()}), typeWorkflowResult, statusCompleted)
	want(t, a.chat("b-3", "转人工"), typeWorkflowResult, statusCompleted)
	if h := get[handoffs](a, "/api/v1/cabin/handoffs"); len(h.Handoffs) != 1 || h.Handoffs[0].Session != "b-3" {
		t.Errorf("key-b's hand-offs %+v", h.Handoffs)
	}

	// A's data is as A left it.
	a.key = "key-a"
	if v := a.vehicle(defaultVehicle); v.Windows["driver"] != 100 || v.Sunroof != 100 {
		t.Errorf("key-a's car after key-b's turns: windows %v, sunroof %d", v.Windows, v.Sunroof)
	}
	if o := a.order("A123"); o.Status != orderCancelled {
		t.Errorf("key-a's A123 is %s, want cancelled", o.Status)
	}
	if o := a.order("D234"); o.Status != orderPendingPayment {
		t.Errorf("key-a's D234 is %s: key-b's turn changed it", o.Status)
	}
	if h := get[handoffs](a, "/api/v1/cabin/handoffs"); len(h.Handoffs) != 1 || h.Handoffs[0].Session != "a-3" {
		t.Errorf("key-a's hand-offs %+v", h.Handoffs)
	}
	if info := a.session("a-2"); info.Session.Intent == "" {
		t.Errorf("key-a's session a-2: %+v", info.Session)
	}
}

// A key's first requests, twenty at once, each find its sample orders:
// seeding them races with nothing.
func TestFirstUseAtOnce(t *testing.T) {
	for name, url := range map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "loom.db") },
		"postgres": storetest.PostgresURL,
	} {
		t.Run(name, func(t *testing.T) {
			a := serveLoomOn(t, url(t), "key-a")
			servertest.AtOnce(t, 20, func(i int) *http.Request {
				path := "/api/v1/cabin/orders"
				if i%2 == 1 {
					path += "/A123"
				}
				req, _ := http.NewRequest("GET", a.url+path, nil)
				req.Header.Set("Authorization", "Bearer key-a")
				return req
			})
			a.key = "key-a"
			if l := get[struct{ Orders []Order }](a, "/api/v1/cabin/orders"); len(l.Orders) != len(sampleOrders(time.Now())) {
				t.Errorf("%d orders after the first use, want %d", len(l.Orders), len(sampleOrders(time.Now())))
			}
		})
	}
}

// A file whose cabin tables an earlier build made (without owners) is
// moved to the keyed tables: its rows become the data of no key.
func TestStoreUpgradesEarlierTables(t *testing.T) {
	const earlier = `
CREATE TABLE cabin_vehicles (id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE cabin_orders (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX cabin_orders_user ON cabin_orders(user_id, id);
CREATE TABLE cabin_handoffs (id %s, doc TEXT NOT NULL, created_at TEXT NOT NULL);
INSERT INTO cabin_vehicles VALUES ('car-1', '{"id":"car-1","sunroof":100}', '2026-01-01T00:00:00Z');
INSERT INTO cabin_orders VALUES ('A123', 'demo', 'cancelled', '{"id":"A123","user_id":"demo","status":"cancelled"}', '2026-01-01T00:00:00Z');
INSERT INTO cabin_handoffs (doc, created_at) VALUES ('{"id":1,"session_id":"old"}', '2026-01-01T00:00:00Z');`
	ctx := context.Background()
	check := func(t *testing.T, st Store) {
		if v, err := st.Vehicle(ctx, "car-1"); err != nil || v.Sunroof != 100 {
			t.Errorf("car-1 after the upgrade: %+v, %v", v, err)
		}
		if o, err := st.Order(ctx, "A123"); err != nil || o.Status != orderCancelled {
			t.Errorf("A123 after the upgrade: %+v, %v", o, err)
		}
		if o, err := st.Order(ctx, "B456"); err != nil || o.Status != orderShipped {
			t.Errorf("B456, a sample order the file lacked: %+v, %v", o, err)
		}
		if hs, err := st.Handoffs(ctx); err != nil || len(hs) != 1 || hs[0].Session != "old" {
			t.Errorf("hand-offs after the upgrade: %+v, %v", hs, err)
		}
	}
	for name, url := range map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "loom.db") },
		"postgres": storetest.PostgresURL,
	} {
		t.Run(name, func(t *testing.T) {
			db, err := store.Open(ctx, url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			id := "INTEGER PRIMARY KEY AUTOINCREMENT"
			if db.Dialect() == store.Postgres {
				id = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
			}
			if err := db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, fmt.Sprintf(earlier, id))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for range 2 { // and once more on the upgraded database
				check(t, openSQLStore(t, db))
			}
		})
	}
}

// Bad requests to the cabin's endpoints get the status and the error of
// the rest of the API, before anything streams.
func TestCabinBadInput(t *testing.T) {
	a := serveLoom(t)
	big := `{"text":"` + strings.Repeat("开", maxBody) + `"}`
	for _, c := range []struct {
		name, path, body string
		status           int
		code, message    string
	}{
		{"oversized chat", "/api/v1/agent/chat", big, http.StatusRequestEntityTooLarge, "too_large", "larger than 65536 bytes"},
		{"oversized stream", "/api/v1/agent/chat-stream", big, http.StatusRequestEntityTooLarge, "too_large", "larger than 65536 bytes"},
		{"oversized fill", "/api/v1/agent/fill-slots", big, http.StatusRequestEntityTooLarge, "too_large", "larger than 65536 bytes"},
		{"stream without text", "/api/v1/agent/chat-stream", `{"session_id":"s-1","text":" "}`, http.StatusBadRequest, "bad_request", "text is empty"},
		{"stream on a bad session id", "/api/v1/agent/chat-stream", `{"session_id":"会话 1","text":"打开车窗"}`, http.StatusUnprocessableEntity, "invalid_thread_id", "thread id"},
		{"NUL in an id", "/api/v1/agent/chat", `{"session_id":"s-1","vehicle_id":"car\u0000","text":"打开车窗"}`, http.StatusBadRequest, "bad_request", "NUL"},
		{"NUL in a slot", "/api/v1/agent/fill-slots", `{"session_id":"s-1","slots":{"order_id":"A\u0000"}}`, http.StatusBadRequest, "bad_request", "NUL"},
		{"trailing data", "/api/v1/agent/chat", `{"text":"打开车窗"} {}`, http.StatusBadRequest, "bad_request", "data after the JSON object"},
		{"unknown field", "/api/v1/agent/chat", `{"text":"打开车窗","colour":"red"}`, http.StatusBadRequest, "bad_request", "colour"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(a.url+c.path, "application/json", bytes.NewReader([]byte(c.body)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct{ Error httpError }
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("HTTP %d, body: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.status || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.message) {
				t.Errorf("HTTP %d %+v, want %d %s with %q", resp.StatusCode, e.Error, c.status, c.code, c.message)
			}
		})
	}
	for _, c := range []struct{ path, message string }{
		{"/api/v1/agent/sessions/nosuch", "session nosuch not found"},
		{"/api/v1/agent/sessions/bad%00id", "session bad\x00id not found"},
		{"/api/v1/cabin/orders/Z999", "order Z999 not found"},
	} {
		var e struct{ Error httpError }
		if code := a.do("GET", c.path, nil, &e); code != http.StatusNotFound || e.Error.Code != "not_found" || e.Error.Message != c.message {
			t.Errorf("GET %s: HTTP %d %+v, want 404 %q", c.path, code, e.Error, c.message)
		}
	}
}
