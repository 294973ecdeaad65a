package cabin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/tool"
)

// Vehicle is the state of a simulated car.
type Vehicle struct {
	ID string `json:"id"`
	// Windows maps driver, passenger, rear_left and rear_right to how far
	// each is open, in percent.
	Windows map[string]int `json:"windows"`
	// Sunroof is how far the sunroof is open, in percent.
	Sunroof     int  `json:"sunroof"`
	DoorsLocked bool `json:"doors_locked"`
	AC          ac   `json:"ac"`
	// DefogFront and DefogRear are the demisters.
	DefogFront bool `json:"defog_front"`
	DefogRear  bool `json:"defog_rear"`
	Lights     bool `json:"lights"`
	// SeatHeat maps driver, passenger and rear to a level, 0 (off) to 3.
	SeatHeat      map[string]int `json:"seat_heat"`
	MirrorsFolded bool           `json:"mirrors_folded"`
	Wipers        Wipers         `json:"wipers"`
	Media         Media          `json:"media"`
	Navigation    Navigation     `json:"navigation"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// ac is the air conditioning.
type ac struct {
	On          bool    `json:"on"`
	Temperature float64 `json:"temperature"`
	// Fan is the fan level, 1 to 7.
	Fan int `json:"fan"`
}

// Wipers are the windscreen wipers.
type Wipers struct {
	On    bool   `json:"on"`
	Speed string `json:"speed"` // low or high
}

// Media is what plays.
type Media struct {
	Playing bool   `json:"playing"`
	Track   string `json:"track"`
	// Index is the track's place in Playlist, -1 for a search or a genre.
	Index  int  `json:"index"`
	Volume int  `json:"volume"` // 0 to 30
	Muted  bool `json:"muted"`
}

// Navigation is the route being followed.
type Navigation struct {
	Active       bool   `json:"active"`
	Destination  string `json:"destination,omitempty"`
	AvoidHighway bool   `json:"avoid_highway,omitempty"`
	ETAMinutes   int    `json:"eta_minutes,omitempty"`
}

// playlist is the simulated car's music library.
var playlist = []string{"晴天 - 周杰伦", "稻香 - 周杰伦", "平凡之路 - 朴树", "成都 - 赵雷", "夜空中最亮的星 - 逃跑计划", "Yesterday - The Beatles"}

// Window positions.
var windowPositions = []string{"driver", "passenger", "rear_left", "rear_right"}

// Seat positions.
var seatPositions = []string{"driver", "passenger", "rear"}

// newVehicle returns a parked car: windows shut, doors locked, AC off at
// 24 °C, volume 12.
func newVehicle(id string) Vehicle {
	v := Vehicle{ID: id, DoorsLocked: true, AC: ac{Temperature: 24, Fan: 3},
		Windows: map[string]int{}, SeatHeat: map[string]int{},
		Wipers: Wipers{Speed: "low"}, Media: Media{Index: 0, Track: playlist[0], Volume: 12}}
	for _, p := range windowPositions {
		v.Windows[p] = 0
	}
	for _, p := range seatPositions {
		v.SeatHeat[p] = 0
	}
	return v
}

func (v Vehicle) clone() Vehicle {
	v.Windows = maps.Clone(v.Windows)
	v.SeatHeat = maps.Clone(v.SeatHeat)
	return v
}

// refusal is a request a backend turns down; it becomes a Result with
// Success false and Data["reason"] = reason.
type refusal struct{ reason, message string }

func (r *refusal) Error() string { return r.message }

// vehicleOp changes a vehicle for a call and returns the result's data.
type vehicleOp func(v *Vehicle, slots map[string]string) (map[string]any, error)

// set is an op that changes v and has no data to tell.
func set(f func(v *Vehicle)) vehicleOp {
	return func(v *Vehicle, _ map[string]string) (map[string]any, error) { f(v); return nil, nil }
}

// vehicleTools returns the simulated vehicle's tools (plugin.cabin.*, see
// ToolName), over store. They all change the car: they are write tools.
func vehicleTools(store vehicleStore) []tool.Tool {
	ops := []struct {
		plugin, description string
		op                  vehicleOp
	}{
		{"plugin.cabin.navigation", "start navigation to the destination slot", navigate},
		{"plugin.cabin.navigation.cancel", "stop navigation; refused when none is going on", stopNavigation},
		{"plugin.cabin.ac.on", "air conditioning on", func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.AC.On = true; return acData(v), nil }},
		{"plugin.cabin.ac.off", "air conditioning off", func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.AC.On = false; return acData(v), nil }},
		{"plugin.cabin.ac_control", "set the temperature slot, 16 to 32", setTemperature},
		{"plugin.cabin.fan.up", "fan faster", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return fan(v, +1), nil }},
		{"plugin.cabin.fan.down", "fan slower", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return fan(v, -1), nil }},
		{"plugin.cabin.defog.front_on", "demist the windscreen", set(func(v *Vehicle) { v.DefogFront = true })},
		{"plugin.cabin.defog.rear_on", "demist the rear window", set(func(v *Vehicle) { v.DefogRear = true })},
		{"plugin.cabin.window.open", "open the windows at the position slot, by the opening slot", func(v *Vehicle, s map[string]string) (map[string]any, error) { return windows(v, s, opening(s)), nil }},
		{"plugin.cabin.window.close", "close the windows at the position slot", func(v *Vehicle, s map[string]string) (map[string]any, error) { return windows(v, s, 0), nil }},
		{"plugin.cabin.sunroof.open", "open the sunroof, by the opening slot", func(v *Vehicle, s map[string]string) (map[string]any, error) { v.Sunroof = opening(s); return nil, nil }},
		{"plugin.cabin.sunroof.close", "close the sunroof", set(func(v *Vehicle) { v.Sunroof = 0 })},
		{"plugin.cabin.doors.lock", "lock the doors", set(func(v *Vehicle) { v.DoorsLocked = true })},
		{"plugin.cabin.doors.unlock", "unlock the doors", set(func(v *Vehicle) { v.DoorsLocked = false })},
		{"plugin.cabin.music_play", "play the music slot, or resume", play},
		{"plugin.cabin.music.pause", "pause music; refused when nothing plays", pause},
		{"plugin.cabin.music.next", "next track", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return skip(v, +1), nil }},
		{"plugin.cabin.music.previous", "previous track", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return skip(v, -1), nil }},
		{"plugin.cabin.volume.up", "louder", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return volume(v, +3), nil }},
		{"plugin.cabin.volume.down", "quieter", func(v *Vehicle, _ map[string]string) (map[string]any, error) { return volume(v, -3), nil }},
		{"plugin.cabin.volume.mute", "mute", set(func(v *Vehicle) { v.Media.Muted = true })},
		{"plugin.cabin.lights.on", "lights on", set(func(v *Vehicle) { v.Lights = true })},
		{"plugin.cabin.lights.off", "lights off", set(func(v *Vehicle) { v.Lights = false })},
		{"plugin.cabin.seat_heat.on", "seat heating on at the position and level slots", func(v *Vehicle, s map[string]string) (map[string]any, error) { return seatHeat(v, s, true), nil }},
		{"plugin.cabin.seat_heat.off", "seat heating off at the position slot", func(v *Vehicle, s map[string]string) (map[string]any, error) { return seatHeat(v, s, false), nil }},
		{"plugin.cabin.mirror.fold", "fold the mirrors", set(func(v *Vehicle) { v.MirrorsFolded = true })},
		{"plugin.cabin.mirror.unfold", "unfold the mirrors", set(func(v *Vehicle) { v.MirrorsFolded = false })},
		{"plugin.cabin.wiper.on", "wipers on at the wiper_speed slot", wipersOn},
		{"plugin.cabin.wiper.off", "wipers off", set(func(v *Vehicle) { v.Wipers.On = false })},
	}
	out := make([]tool.Tool, len(ops))
	for i, o := range ops {
		out[i] = newTool(o.plugin, o.description, tool.Write, withPrefs(store, o.plugin, vehicleCall(store, o.op)))
	}
	return append(out, newTool("plugin.cabin.doors.unlock.check", "tell whether the doors are locked, so that unlocking them changes something", tool.Read, checkUnlock(store)))
}

// checkUnlock is the check asked before unlocking: doors already
// unlocked are not asked about, and no reply says they were unlocked.
func checkUnlock(store vehicleStore) func(context.Context, Args) (Result, error) {
	return func(ctx context.Context, args Args) (Result, error) {
		v, err := store.Vehicle(ctx, args.Vehicle)
		if err != nil {
			return Result{}, fmt.Errorf("read vehicle %s: %w", args.Vehicle, err)
		}
		if !v.DoorsLocked {
			return Result{Success: false, Message: "the doors are unlocked already", Data: map[string]any{"reason": "already_unlocked"}}, nil
		}
		return Result{Success: true, Message: "the doors are locked"}, nil
	}
}

// vehicleCall runs op on the call's vehicle in one store update.
func vehicleCall(store vehicleStore, op vehicleOp) func(context.Context, Args) (Result, error) {
	return func(ctx context.Context, args Args) (Result, error) {
		var data map[string]any
		_, err := store.UpdateVehicle(ctx, args.Vehicle, func(v *Vehicle) error {
			d, err := op(v, args.Slots)
			data = d
			return err
		})
		var r *refusal
		if errors.As(err, &r) {
			return Result{Success: false, Message: r.message, Data: map[string]any{"reason": r.reason}}, nil
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Success: true, Message: "ok", Data: data}, nil
	}
}

// stopNavigation ends the route; with none going on it is refused, so
// that no reply says navigation ended.
func stopNavigation(v *Vehicle, _ map[string]string) (map[string]any, error) {
	if !v.Navigation.Active {
		return nil, &refusal{"not_navigating", "no navigation is going on"}
	}
	v.Navigation = Navigation{}
	return nil, nil
}

// pause pauses the music; with nothing playing it is refused, so that no
// reply says the music was paused.
func pause(v *Vehicle, _ map[string]string) (map[string]any, error) {
	if !v.Media.Playing {
		return nil, &refusal{"not_playing", "nothing is playing"}
	}
	v.Media.Playing = false
	return nil, nil
}

func navigate(v *Vehicle, s map[string]string) (map[string]any, error) {
	dest := s["destination"]
	if dest == "" {
		return nil, &refusal{"no_destination", "no destination"}
	}
	// A stable pseudo-distance: 10 to 49 minutes by the destination's name.
	eta := 10
	for _, r := range dest {
		eta = (eta*31 + int(r)) % 40
	}
	v.Navigation = Navigation{Active: true, Destination: dest, AvoidHighway: s["avoid_highway"] == "true", ETAMinutes: 10 + eta}
	return map[string]any{"destination": dest, "eta_minutes": v.Navigation.ETAMinutes, "avoid_highway": strconv.FormatBool(v.Navigation.AvoidHighway)}, nil
}

func acData(v *Vehicle) map[string]any {
	return map[string]any{"ac_on": v.AC.On, "temperature": v.AC.Temperature, "fan": v.AC.Fan}
}

func setTemperature(v *Vehicle, s map[string]string) (map[string]any, error) {
	t, err := strconv.ParseFloat(s["temperature"], 64)
	if err != nil || t < 16 || t > 32 {
		return nil, &refusal{"out_of_range", "temperature must be 16 to 32"}
	}
	v.AC.On, v.AC.Temperature = true, t
	return acData(v), nil
}

func fan(v *Vehicle, d int) map[string]any {
	v.AC.On = true
	v.AC.Fan = min(max(v.AC.Fan+d, 1), 7)
	return acData(v)
}

// opening is how far to open, in percent: the opening slot ("一半" is
// 50), or fully.
func opening(s map[string]string) int {
	if n, err := strconv.ParseFloat(s["opening"], 64); err == nil {
		return min(max(int(n+0.5), 0), 100)
	}
	return 100
}

// windows opens or closes the windows at the slot position: driver,
// passenger, rear (both rear windows) or all.
func windows(v *Vehicle, s map[string]string, percent int) map[string]any {
	pos := s["position"]
	for _, p := range windowPositions {
		if pos == "" || pos == "all" || pos == p || (pos == "rear" && strings.HasPrefix(p, "rear")) {
			v.Windows[p] = percent
		}
	}
	return map[string]any{"position": cmp.Or(pos, "all")}
}

func seatHeat(v *Vehicle, s map[string]string, on bool) map[string]any {
	pos := cmp.Or(s["position"], "driver")
	level := 0
	if on {
		level = 2
		if n, err := strconv.Atoi(s["level"]); err == nil {
			level = min(max(n, 1), 3)
		}
	}
	for _, p := range seatPositions {
		if pos == p || pos == "all" {
			v.SeatHeat[p] = level
		}
	}
	return map[string]any{"position": pos, "level": level}
}

func wipersOn(v *Vehicle, s map[string]string) (map[string]any, error) {
	v.Wipers = Wipers{On: true, Speed: cmp.Or(s["wiper_speed"], "low")}
	return map[string]any{"wiper_speed": v.Wipers.Speed}, nil
}

// play plays the track whose title or artist contains the slot music, a
// station of that name when none does, or resumes the current track.
func play(v *Vehicle, s map[string]string) (map[string]any, error) {
	q := strings.TrimSpace(s["music"])
	switch {
	case q == "":
	default:
		v.Media.Index, v.Media.Track = -1, q
		best := 0
		for i, t := range playlist { // "周杰伦的稻香": the title counts over the artist
			if n := trackScore(t, q); n > best {
				best, v.Media.Index, v.Media.Track = n, i, t
			}
		}
	}
	v.Media.Playing, v.Media.Muted = true, false
	return map[string]any{"track": v.Media.Track, "music": q}, nil
}

// trackScore is how well the query names the track: 2 for each part of
// it ("artist的title") in the title, 1 for each in the artist, 0 for none.
func trackScore(track, q string) int {
	title, artist, _ := strings.Cut(track, " - ")
	n := 0
	for _, part := range strings.Split(strings.ToLower(q), "的") {
		switch {
		case part == "":
		case strings.Contains(strings.ToLower(title), part):
			n += 2
		case strings.Contains(strings.ToLower(artist), part):
			n++
		}
	}
	return n
}

func skip(v *Vehicle, d int) map[string]any {
	i := v.Media.Index
	if i < 0 {
		i = 0
	}
	i = (i + d + len(playlist)) % len(playlist)
	v.Media.Index, v.Media.Track, v.Media.Playing = i, playlist[i], true
	return map[string]any{"track": v.Media.Track}
}

func volume(v *Vehicle, d int) map[string]any {
	v.Media.Volume = min(max(v.Media.Volume+d, 0), 30)
	v.Media.Muted = false
	return map[string]any{"volume": v.Media.Volume}
}
