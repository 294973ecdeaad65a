package cabin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/loomkit/loom/tool"
)

// An action with a webhook in actions.yml calls a real backend over HTTP:
// a write tool of the webhooks pack, named for the plugin_id.
func TestWebhookTool(t *testing.T) {
	var mu sync.Mutex
	var calls []webhookCall
	var auth []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c webhookCall
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
	b, _ := defaults.ReadFile("config/zh-CN/" + fileActions)
	edited := strings.Replace(string(b), "{id: action.order.query, plugin: plugin.order.query, risk: low, description: look up an order}",
		`{id: action.order.query, plugin: plugin.crm.order, risk: low, webhook: {url: "`+backend.URL+`", timeout: 2s, kind: read, headers: {Authorization: "Bearer ${CRM_TOKEN}"}}}`, 1)
	if edited == string(b) {
		t.Fatal("the edit did not apply")
	}
	if err := os.WriteFile(filepath.Join(dir, fileActions), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, Options{ConfigDir: dir})
	want(t, a.chat("s1", "查订单Q100"), typeWorkflowResult, statusCompleted, "订单 Q100（雨伞）当前状态：已发货")
	want(t, a.chat("s2", "查订单X500"), typeWorkflowResult, statusFailed, "服务暂时不可用")
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0].Plugin != "plugin.crm.order" || calls[0].Intent != "cs_query_order" || calls[0].Session != "s1" || auth[0] != "Bearer secret" {
		t.Errorf("calls %+v, authorization %v", calls, auth)
	}
	tl, place, ok := a.app.Tools().Lookup("plugin_crm_order")
	if !ok || tl.Kind() != tool.Read || place != (tool.Place{Domain: toolDomain, Pack: packWebhooks}) {
		t.Errorf("the webhook's tool: %v %s at %+v", ok, tl.Kind(), place)
	}
}

// The cabin's tools are one registry: the built-in ones in their packs,
// a tool of Options.Tools in place of the built-in of its name, another
// in the options pack; every one takes Args.
func TestTools(t *testing.T) {
	ctx := context.Background()
	boom := newTool("plugin.test.boom", "fails", tool.Read, func(context.Context, Args) (Result, error) { return Result{}, errors.New("boom") })
	hush := newTool("plugin.cabin.volume.mute", "does nothing", tool.Write, func(context.Context, Args) (Result, error) {
		return Result{Success: true, Message: "shh", Data: map[string]any{"muted": "never"}}, nil
	})
	app := newApp(t, Options{Tools: []tool.Tool{boom, hush}})
	r := app.Tools()
	if got := r.Domains(); len(got) != 1 || got[0].Name != toolDomain || !slices.Equal(got[0].Packs, []string{packVehicle, packOrders, packOptions}) {
		t.Errorf("domains %+v", got)
	}
	if _, err := app.tool("plugin.nope"); !errors.Is(err, tool.ErrUnknown) {
		t.Errorf("unknown plugin: %v", err)
	}
	if _, err := callTool(ctx, boom, Args{}); err == nil || !strings.Contains(err.Error(), "tool plugin_test_boom: boom") {
		t.Errorf("failing tool: %v", err)
	}
	if _, place, _ := r.Lookup("plugin_test_boom"); place.Pack != packOptions {
		t.Errorf("a new tool is at %+v", place)
	}
	if tl, place, _ := r.Lookup("plugin_cabin_volume_mute"); tl.Description() != "does nothing" || place.Pack != packVehicle {
		t.Errorf("the replaced tool: %q at %+v", tl.Description(), place)
	}
	got := newAPI(t, Options{Tools: []tool.Tool{hush}}).chat("s", "静音")
	want(t, got, typeWorkflowResult, statusCompleted)
	if st := got.Workflow.Steps[0]; st.Result == nil || st.Result.Message != "shh" {
		t.Errorf("静音 ran %+v, not the tool given in Options", st.Result)
	}
	for _, c := range []struct {
		name string
		kind tool.Kind
	}{{"plugin_order_query", tool.Read}, {"plugin_logistics_query", tool.Read}, {"plugin_order_cancel_check", tool.Read},
		{"plugin_order_cancel", tool.Write}, {"plugin_service_transfer_human", tool.Write}, {"plugin_cabin_window_open", tool.Write}} {
		tl, _, ok := r.Lookup(c.name)
		if !ok || tl.Kind() != c.kind || !strings.Contains(string(tl.Parameters()), `"slots"`) {
			t.Errorf("%s: registered %v, kind %s, parameters %s", c.name, ok, tl.Kind(), tl.Parameters())
		}
	}
}

// Whether a step asks for a yes is the tool policy's: write tools at the
// risk levels or of the intents rules.yml names ask, other write tools
// and every read tool run at once.
func TestConfirmPolicy(t *testing.T) {
	app := newApp(t, Options{})
	for plugin, asks := range map[string]bool{
		"plugin.order.cancel": true, "plugin.cabin.doors.unlock": true, // intent cs_cancel_order, risk high
		"plugin.cabin.window.open": false, "plugin.service.transfer_human": false, // write, risk low
		"plugin.order.query": false, // read
	} {
		if got := app.asks(plugin); got != asks {
			t.Errorf("%s asks first: %v, want %v", plugin, got, asks)
		}
	}
	if p := app.policy; !slices.Contains(p.AutoApprove, "plugin_cabin_window_open") || slices.Contains(p.AutoApprove, "plugin_order_cancel") {
		t.Errorf("auto-approved %v", p.AutoApprove)
	}
}

// A confirmation rule that names a read tool stops New, with the line:
// only write tools ask first.
func TestConfirmReadTool(t *testing.T) {
	for _, c := range []struct{ file, from, to, want string }{
		{fileRules, "intents: [cs_cancel_order, cs_refund]", "intents: [cs_cancel_order, cs_refund, cs_query_order]", `confirmation: intent "cs_query_order" runs tool plugin_order_query, which only reads`},
		{fileActions, "plugin: plugin.logistics.query, risk: low", "plugin: plugin.logistics.query, risk: high", `action "action.logistics.query": rules.yml asks for a yes at risk "high", but tool plugin_logistics_query only reads`},
	} {
		dir := t.TempDir()
		b, _ := defaults.ReadFile("config/zh-CN/" + c.file)
		edited := strings.Replace(string(b), c.from, c.to, 1)
		if edited == string(b) {
			t.Fatalf("%s: the edit did not apply", c.file)
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := New(context.Background(), Options{ConfigDir: dir, Logger: quiet})
		prefix := fmt.Sprintf("%s:%d: ", c.file, lineOf(edited, c.to))
		if !errors.Is(err, errConfig) || !strings.Contains(err.Error(), prefix+c.want) {
			t.Errorf("%s: error %v, want %s%s", c.file, err, prefix, c.want)
		}
	}
}

// A confirmation asks the tool's confirm request, as every agent does,
// with the assistant's question for summary; a tool.ConfirmAnswer answers
// it, its reason kept in the routing debug.
func TestConfirmRequest(t *testing.T) {
	ctx := context.Background()
	app := newApp(t, Options{})
	for i, ans := range []tool.ConfirmAnswer{{Accept: false, Note: "买错了也不退"}, {Accept: true}} {
		id := fmt.Sprint("c", i)
		r, err := app.Chat(ctx, ChatRequest{SessionID: id, Text: "取消订单A123"})
		if err != nil {
			t.Fatal(err)
		}
		want(t, *r, typeAskConfirmation, statusWaitingConfirmation, "确认要取消订单 A123")
		info, err := app.Session(ctx, id)
		if err != nil || info.Pending == nil {
			t.Fatalf("session %s: %+v, %v", id, info, err)
		}
		var q Question
		if err := json.Unmarshal(info.Pending.Payload, &q); err != nil || q.Tool == nil {
			t.Fatalf("question %s: %v", info.Pending.Payload, err)
		}
		var args Args
		if err := json.Unmarshal(q.Tool.Args, &args); err != nil || q.Tool.Tool != "plugin_order_cancel" || args.Slots["order_id"] != "A123" ||
			args.Session != id || !strings.Contains(q.Tool.Summary, "确认要取消订单 A123") || !strings.Contains(q.Message, q.Tool.Summary) {
			t.Errorf("confirm request %+v (%v), message %q", q.Tool, err, q.Message)
		}
		res, err := app.graph.Resume(ctx, id, ans)
		if err != nil {
			t.Fatal(err)
		}
		o, err := app.store.Order(ctx, "A123")
		if err != nil {
			t.Fatal(err)
		}
		st := res.State.Session.Workflow.Steps[0]
		if ans.Accept != (o.Status == orderCancelled) || ans.Accept != (st.Status == stepDone) {
			t.Errorf("answer %+v: step %s, order %s", ans, st.Status, o.Status)
		}
		if d := res.State.Reply.Debug.Continuation; !ans.Accept && !strings.Contains(d, ans.Note) {
			t.Errorf("continuation %q without the reason", d)
		}
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
	_, err := callTool(context.Background(), newWebhook("plugin.p", "", webhookSpec{URL: slow.URL, Timeout: 20 * time.Millisecond}, nil), Args{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "tool plugin_p: webhook "+slow.URL) {
		t.Errorf("error %v, want a deadline", err)
	}
}

// byName is the tool of tools that carries out plugin.
func byName(t *testing.T, tools []tool.Tool, plugin string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == toolName(plugin) {
			return tl
		}
	}
	t.Fatalf("no tool for %s", plugin)
	return tool.Tool{}
}

// The simulated vehicle's tools, each on a fresh car, change what they
// say and nothing else.
func TestVehicleTools(t *testing.T) {
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
		{"plugin.cabin.music.previous", nil, true, func(v Vehicle) bool { return v.Media.Track == playlist[len(playlist)-1] }},
		{"plugin.cabin.volume.down", nil, true, func(v Vehicle) bool { return v.Media.Volume == 9 }},
		{"plugin.cabin.navigation", map[string]string{"destination": "机场", "avoid_highway": "true"}, true, func(v Vehicle) bool {
			return v.Navigation.Active && v.Navigation.AvoidHighway && v.Navigation.ETAMinutes >= 10
		}},
		{"plugin.cabin.navigation", nil, false, func(v Vehicle) bool { return !v.Navigation.Active }},
		{"plugin.cabin.doors.unlock", nil, true, func(v Vehicle) bool { return !v.DoorsLocked }},
		{"plugin.cabin.wiper.on", map[string]string{"wiper_speed": "high"}, true, func(v Vehicle) bool { return v.Wipers.On && v.Wipers.Speed == "high" }},
		{"plugin.cabin.mirror.fold", nil, true, func(v Vehicle) bool { return v.MirrorsFolded }},
	} {
		store := newMemoryStore()
		r, err := callTool(ctx, byName(t, vehicleTools(store), c.plugin), Args{Slots: c.slots, Vehicle: "v"})
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
func TestOrderTools(t *testing.T) {
	ctx := context.Background()
	for name, store := range map[string]Store{"memory": newMemoryStore(), "sqlite": newApp(t, Options{}).store, "postgres": postgresStore(t)} {
		tools := orderTools(store)
		for _, c := range []struct {
			plugin, order string
			ok            bool
			reason        string
			status        string // the order's status afterwards
		}{
			{"plugin.order.query", "A123", true, "", orderPendingShipment},
			{"plugin.order.query", "Z999", false, "order_not_found", ""},
			{"plugin.logistics.query", "B456", true, "", orderShipped},
			{"plugin.logistics.query", "D234", false, "not_shipped", orderPendingPayment},
			{"plugin.order.cancel.check", "A123", true, "", orderPendingShipment},
			{"plugin.order.cancel", "A123", true, "", orderCancelled},
			{"plugin.order.cancel", "A123", false, "already_cancelled", orderCancelled},
			{"plugin.order.cancel.check", "D234", true, "", orderPendingPayment},
			{"plugin.order.cancel", "D234", true, "", orderCancelled},
			{"plugin.order.cancel.check", "B456", false, "already_shipped", orderShipped},
			{"plugin.order.cancel", "B456", false, "already_shipped", orderShipped},
			{"plugin.order.cancel", "C789", false, "already_delivered", orderDelivered},
			{"plugin.order.cancel", "Z999", false, "order_not_found", ""},
		} {
			r, err := callTool(ctx, byName(t, tools, c.plugin), Args{Slots: map[string]string{"order_id": c.order}})
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
			r, err := callTool(ctx, byName(t, tools, "plugin.service.transfer_human"), Args{User: "u", Session: "s"})
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
	st := openSQLStore(t, db)
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
// intents as its labels, and its answer joins the routing.
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
	b, _ := defaults.ReadFile("config/zh-CN/" + fileRules)
	edited := strings.Replace(string(b), "routing:\n", "remote_classifier: {url: \""+svc.URL+"\", top_k: 3, timeout: 500ms}\nrouting:\n", 1)
	if err := os.WriteFile(filepath.Join(dir, fileRules), []byte(edited), 0o644); err != nil {
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
