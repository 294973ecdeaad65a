package cabin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// An action with a webhook in actions.yml calls a real backend over HTTP.
func TestWebhookPlugin(t *testing.T) {
	var mu sync.Mutex
	var calls []Call
	var auth []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c Call
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		calls = append(calls, c)
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if c.Slots["order_id"] == "X500" {
			http.Error(w, "backend down", http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode(Result{Success: true, Message: "found", Data: map[string]any{"order_id": c.Slots["order_id"], "order_status": "shipped", "item": "雨伞"}})
	}))
	defer backend.Close()
	t.Setenv("CRM_TOKEN", "secret")
	dir := t.TempDir()
	b, _ := defaults.ReadFile("config/zh-CN/" + FileActions)
	edited := strings.Replace(string(b), "{id: action.order.query, plugin: plugin.order.query, risk: low, description: look up an order}",
		`{id: action.order.query, plugin: plugin.crm.order, risk: low, webhook: {url: "`+backend.URL+`", timeout: 2s, headers: {Authorization: "Bearer ${CRM_TOKEN}"}}}`, 1)
	if edited == string(b) {
		t.Fatal("the edit did not apply")
	}
	if err := os.WriteFile(filepath.Join(dir, FileActions), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, Options{ConfigDir: dir})
	want(t, a.chat("s1", "查订单Q100"), TypeWorkflowResult, StatusCompleted, "订单 Q100（雨伞）当前状态：已发货")
	want(t, a.chat("s2", "查订单X500"), TypeWorkflowResult, StatusCompleted, "服务暂时不可用")
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0].Plugin != "plugin.crm.order" || calls[0].Intent != "cs_query_order" || calls[0].Session != "s1" || auth[0] != "Bearer secret" {
		t.Errorf("calls %+v, authorization %v", calls, auth)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if _, err := r.Call(context.Background(), Call{Plugin: "nope"}); !errors.Is(err, ErrNoPlugin) {
		t.Errorf("unknown plugin: %v", err)
	}
	r.Register("p", PluginFunc(func(context.Context, Call) (Result, error) { return Result{}, errors.New("boom") }))
	if _, err := r.Call(context.Background(), Call{Plugin: "p"}); err == nil || !strings.Contains(err.Error(), "call p: boom") {
		t.Errorf("failing plugin: %v", err)
	}
	if ids := r.IDs(); len(ids) != 1 || ids[0] != "p" {
		t.Errorf("ids %v", ids)
	}
}

func TestWebhookTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	_, err := (&Webhook{URL: slow.URL, Timeout: 20 * time.Millisecond}).Call(context.Background(), Call{Plugin: "p"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want a deadline", err)
	}
}

// The simulated vehicle's plugins, each on a fresh car, change what they
// say and nothing else.
func TestVehiclePlugins(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		plugin string
		slots  map[string]string
		ok     bool
		check  func(v Vehicle) bool
	}{
		{"plugin.cabin.window.open", map[string]string{"position": "rear"}, true, func(v Vehicle) bool {
			return v.Windows["rear_left"] == 100 && v.Windows["rear_right"] == 100 && v.Windows["driver"] == 0
		}},
		{"plugin.cabin.ac_control", map[string]string{"temperature": "19.5"}, true, func(v Vehicle) bool { return v.AC.On && v.AC.Temperature == 19.5 }},
		{"plugin.cabin.ac_control", map[string]string{"temperature": "40"}, false, func(v Vehicle) bool { return !v.AC.On && v.AC.Temperature == 24 }},
		{"plugin.cabin.fan.up", nil, true, func(v Vehicle) bool { return v.AC.Fan == 4 && v.AC.On }},
		{"plugin.cabin.seat_heat.on", map[string]string{"position": "passenger", "level": "3"}, true, func(v Vehicle) bool { return v.SeatHeat["passenger"] == 3 && v.SeatHeat["driver"] == 0 }},
		{"plugin.cabin.music_play", map[string]string{"music": "朴树"}, true, func(v Vehicle) bool { return v.Media.Playing && v.Media.Track == "平凡之路 - 朴树" }},
		{"plugin.cabin.music.previous", nil, true, func(v Vehicle) bool { return v.Media.Track == Playlist[len(Playlist)-1] }},
		{"plugin.cabin.volume.down", nil, true, func(v Vehicle) bool { return v.Media.Volume == 9 }},
		{"plugin.cabin.navigation", map[string]string{"destination": "机场", "avoid_highway": "true"}, true, func(v Vehicle) bool {
			return v.Navigation.Active && v.Navigation.AvoidHighway && v.Navigation.ETAMinutes >= 10
		}},
		{"plugin.cabin.navigation", nil, false, func(v Vehicle) bool { return !v.Navigation.Active }},
		{"plugin.cabin.doors.unlock", nil, true, func(v Vehicle) bool { return !v.DoorsLocked }},
		{"plugin.cabin.wiper.on", map[string]string{"wiper_speed": "high"}, true, func(v Vehicle) bool { return v.Wipers.On && v.Wipers.Speed == "high" }},
	} {
		store := NewMemoryStore()
		r, err := VehiclePlugins(store)[c.plugin].Call(ctx, Call{Plugin: c.plugin, Slots: c.slots, Vehicle: "v"})
		if err != nil {
			t.Fatalf("%s: %v", c.plugin, err)
		}
		v, _ := store.Vehicle(ctx, "v")
		if r.Success != c.ok || !c.check(v) {
			t.Errorf("%s %v: success %v (%s), vehicle %+v", c.plugin, c.slots, r.Success, r.Message, v)
		}
		if !r.Success && r.Data["reason"] == nil {
			t.Errorf("%s: a refusal without a reason", c.plugin)
		}
	}
}

// The order service's cancel rules, on each store.
func TestOrderPlugins(t *testing.T) {
	ctx := context.Background()
	for name, store := range map[string]Store{"memory": NewMemoryStore(), "sqlite": newApp(t, Options{}).store, "postgres": postgresStore(t)} {
		plugins := OrderPlugins(store)
		for _, c := range []struct {
			plugin, order string
			ok            bool
			reason        string
			status        string // the order's status afterwards
		}{
			{"plugin.order.query", "A123", true, "", OrderPendingShipment},
			{"plugin.order.query", "Z999", false, "order_not_found", ""},
			{"plugin.logistics.query", "B456", true, "", OrderShipped},
			{"plugin.logistics.query", "D234", false, "not_shipped", OrderPendingPayment},
			{"plugin.order.cancel", "A123", true, "", OrderCancelled},
			{"plugin.order.cancel", "A123", false, "already_cancelled", OrderCancelled},
			{"plugin.order.cancel", "D234", true, "", OrderCancelled},
			{"plugin.order.cancel", "B456", false, "already_shipped", OrderShipped},
			{"plugin.order.cancel", "C789", false, "already_delivered", OrderDelivered},
			{"plugin.order.cancel", "Z999", false, "order_not_found", ""},
		} {
			r, err := plugins[c.plugin].Call(ctx, Call{Plugin: c.plugin, Slots: map[string]string{"order_id": c.order}})
			if err != nil {
				t.Fatalf("%s %s %s: %v", name, c.plugin, c.order, err)
			}
			reason, _ := r.Data["reason"].(string)
			if r.Success != c.ok || reason != c.reason {
				t.Errorf("%s %s %s: success %v reason %q, want %v %q", name, c.plugin, c.order, r.Success, reason, c.ok, c.reason)
			}
			if c.status != "" {
				if o, err := store.Order(ctx, c.order); err != nil || o.Status != c.status {
					t.Errorf("%s %s %s: order %+v, %v; want %s", name, c.plugin, c.order, o, err, c.status)
				}
			}
		}
		for i := 1; i <= 2; i++ {
			r, err := plugins["plugin.service.transfer_human"].Call(ctx, Call{Plugin: "plugin.service.transfer_human", User: "u", Session: "s"})
			if err != nil || !r.Success || formatValue(r.Data["ticket_id"]) != formatValue(int64(i)) {
				t.Errorf("%s hand-off %d: %+v, %v", name, i, r, err)
			}
		}
		if hs, err := store.Handoffs(ctx); err != nil || len(hs) != 2 || hs[1].Session != "s" {
			t.Errorf("%s hand-offs %+v, %v", name, hs, err)
		}
	}
}

// postgresStore is the SQL store on a fresh PostgreSQL schema, as the
// agent keeps it when loom serve runs on Postgres.
func postgresStore(t *testing.T) Store {
	t.Helper()
	db, err := store.Open(context.Background(), storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := OpenStoreOn(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	// Vehicles too: an update is read back.
	if _, err := st.UpdateVehicle(context.Background(), "car-9", func(v *Vehicle) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Vehicle(context.Background(), "car-9"); err != nil {
		t.Fatal(err)
	}
	return st
}

// A remote classifier in rules.yml is asked on every turn, with the
// intents as its labels, and its answer joins the routing (seed §13.1).
func TestRemoteClassifier(t *testing.T) {
	var mu sync.Mutex
	var asked []struct {
		Text   string   `json:"text"`
		Labels []string `json:"labels"`
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var req struct {
			Text   string   `json:"text"`
			Labels []string `json:"labels"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		asked = append(asked, req)
		w.Write([]byte(`{"candidates":[{"intent":"cabin_seat_heat_on","score":0.93}]}`))
	}))
	defer svc.Close()
	dir := t.TempDir()
	b, _ := defaults.ReadFile("config/zh-CN/" + FileRules)
	edited := strings.Replace(string(b), "routing:\n", "remote_classifier: {url: \""+svc.URL+"\", top_k: 3, timeout: 500ms}\nrouting:\n", 1)
	if err := os.WriteFile(filepath.Join(dir, FileRules), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, Options{ConfigDir: dir})
	r := a.chat("s1", "屁股底下好凉")
	if r.Debug.Route == nil {
		t.Fatalf("no route in the reply: %+v", r.Debug)
	}
	var remote *intent.StageResult
	for i, st := range r.Debug.Route.Stages {
		if st.Stage == intent.StageRemote {
			remote = &r.Debug.Route.Stages[i]
		}
	}
	if remote == nil || remote.Error != "" || len(remote.Candidates) != 1 || remote.Candidates[0].Intent != "cabin_seat_heat_on" {
		t.Fatalf("remote stage %+v", remote)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Text != "屁股底下好凉" || !slices.Contains(asked[0].Labels, "cabin_seat_heat_on") {
		t.Errorf("the service was asked %+v", asked)
	}
}
