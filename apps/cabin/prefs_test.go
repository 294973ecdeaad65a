package cabin

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/store"
)

// A driver's temperature and seat heating level, set in one car, are
// what the air conditioning and the seat heating take in another, for
// that driver only; without a store nothing is remembered.
func TestDriverPrefs(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := memory.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	items := memory.New(db, memory.Options{})
	mctx := memory.With(ctx, items.For("key:1"))
	cars := newMemoryStore()
	tools := vehicleTools(cars)
	call := func(ctx context.Context, plugin, user, vehicle string, slots map[string]string) {
		t.Helper()
		r, err := callTool(ctx, byName(t, tools, plugin), Args{Slots: slots, User: user, Vehicle: vehicle})
		if err != nil || !r.Success {
			t.Fatalf("%s: %v %+v", plugin, err, r)
		}
	}
	car := func(id string) Vehicle {
		v, err := cars.Vehicle(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	call(mctx, "plugin.cabin.ac_control", "alice", "car-1", map[string]string{"temperature": "26.5"})
	call(mctx, "plugin.cabin.seat_heat.on", "alice", "car-1", map[string]string{"position": "driver", "level": "3"})
	call(mctx, "plugin.cabin.ac.on", "alice", "car-2", nil)
	call(mctx, "plugin.cabin.seat_heat.on", "alice", "car-2", nil)
	if v := car("car-2"); !v.AC.On || v.AC.Temperature != 26.5 || v.SeatHeat["driver"] != 3 {
		t.Fatalf("alice's second car: ac %+v seat heat %v, want 26.5 and level 3", v.AC, v.SeatHeat)
	}
	// Another driver gets the car's defaults.
	call(mctx, "plugin.cabin.ac.on", "bob", "car-3", nil)
	call(mctx, "plugin.cabin.seat_heat.on", "bob", "car-3", nil)
	if v := car("car-3"); v.AC.Temperature != newVehicle("x").AC.Temperature || v.SeatHeat["driver"] != 2 {
		t.Fatalf("bob's car: ac %+v seat heat %v, want the defaults", v.AC, v.SeatHeat)
	}
	// The preferences are an item of the store, readable over its API.
	it, err := items.For("key:1").Get(ctx, []string{"cabin", "drivers", "alice"}, "preferences", true)
	if err != nil {
		t.Fatal(err)
	}
	var p prefs
	if err := json.Unmarshal(it.Value, &p); err != nil || p != (prefs{Temperature: 26.5, SeatHeat: 3}) {
		t.Fatalf("stored preferences %s", it.Value)
	}
	// Without a store in the context the cabin works and remembers nothing.
	call(ctx, "plugin.cabin.ac_control", "carol", "car-4", map[string]string{"temperature": "17"})
	call(ctx, "plugin.cabin.ac.on", "carol", "car-5", nil)
	if v := car("car-5"); v.AC.Temperature == 17 {
		t.Fatal("a preference was applied without a store")
	}
}
