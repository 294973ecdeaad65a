package cabin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strconv"

	"github.com/loomkit/loom/memory"
)

// A driver's preferences live in the long-term store of the API key that
// runs the cabin (memory.From), so that they hold across threads and
// vehicles: the temperature the driver last set, and the seat heating
// level. Turning the air conditioning on sets the preferred temperature.
// Outside the server (no store in the context), or for a session without
// a user id, nothing is remembered.

// prefsKey is the item that holds a driver's preferences, under
// prefsNamespace(user).
const prefsKey = "preferences"

func prefsNamespace(user string) []string { return []string{"cabin", "drivers", user} }

// prefs are what the cabin remembers of a driver.
type prefs struct {
	// Temperature is the one the driver last set (0: none).
	Temperature float64 `json:"temperature,omitempty"`
	// SeatHeat is the driver's seat heating level last chosen (0: none).
	SeatHeat int `json:"seat_heat,omitempty"`
}

// driverPrefs reads user's preferences; ok is false when there are none
// or no store.
func driverPrefs(ctx context.Context, user string) (p prefs, ok bool) {
	st := memory.From(ctx)
	if st == nil || user == "" {
		return prefs{}, false
	}
	it, err := st.Get(ctx, prefsNamespace(user), prefsKey, false)
	if err != nil {
		if !errors.Is(err, memory.ErrNotFound) {
			slog.WarnContext(ctx, "cabin: reading a driver's preferences", "err", err)
		}
		return prefs{}, false
	}
	return p, json.Unmarshal(it.Value, &p) == nil
}

// remember updates user's preferences with change; a failure is logged,
// never the call's.
func remember(ctx context.Context, user string, change func(*prefs)) {
	st := memory.From(ctx)
	if st == nil || user == "" {
		return
	}
	p, _ := driverPrefs(ctx, user)
	change(&p)
	v, _ := json.Marshal(p)
	if err := st.Put(ctx, prefsNamespace(user), prefsKey, v, memory.PutOptions{}); err != nil {
		slog.WarnContext(ctx, "cabin: keeping a driver's preferences", "err", err)
	}
}

// withPrefs wraps the call of a vehicle tool: turning the air
// conditioning on sets the driver's preferred temperature, and the
// driver's seat heating with no level said takes the preferred level; a
// temperature or a driver's seat heating level the driver says is
// remembered.
func withPrefs(store vehicleStore, plugin string, call func(context.Context, Args) (Result, error)) func(context.Context, Args) (Result, error) {
	switch plugin {
	case "plugin.cabin.ac.on":
		return func(ctx context.Context, args Args) (Result, error) {
			p, ok := driverPrefs(ctx, args.User)
			if !ok || p.Temperature == 0 {
				return call(ctx, args)
			}
			args.Slots = map[string]string{"temperature": strconv.FormatFloat(p.Temperature, 'f', -1, 64)}
			return vehicleCall(store, setTemperature)(ctx, args)
		}
	case "plugin.cabin.ac_control":
		return func(ctx context.Context, args Args) (Result, error) {
			r, err := call(ctx, args)
			if t, ok := r.Data["temperature"].(float64); err == nil && r.Success && ok {
				remember(ctx, args.User, func(p *prefs) { p.Temperature = t })
			}
			return r, err
		}
	case "plugin.cabin.seat_heat.on":
		return func(ctx context.Context, args Args) (Result, error) {
			driver := args.Slots["position"] == "" || args.Slots["position"] == "driver"
			said := args.Slots["level"] != ""
			if p, ok := driverPrefs(ctx, args.User); driver && !said && ok && p.SeatHeat > 0 {
				args.Slots = maps.Clone(args.Slots)
				if args.Slots == nil {
					args.Slots = map[string]string{}
				}
				args.Slots["level"] = strconv.Itoa(p.SeatHeat)
			}
			r, err := call(ctx, args)
			if l, ok := r.Data["level"].(int); err == nil && r.Success && ok && driver && said {
				remember(ctx, args.User, func(p *prefs) { p.SeatHeat = l })
			}
			return r, err
		}
	}
	return call
}
