package cabin

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"
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
	AC          AC   `json:"ac"`
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

// AC is the air conditioning.
type AC struct {
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

// Playlist is the simulated car's music library.
var Playlist = []string{"晴天 - 周杰伦", "稻香 - 周杰伦", "平凡之路 - 朴树", "成都 - 赵雷", "夜空中最亮的星 - 逃跑计划", "Yesterday - The Beatles"}

// Window positions.
var windowPositions = []string{"driver", "passenger", "rear_left", "rear_right"}

// Seat positions.
var seatPositions = []string{"driver", "passenger", "rear"}

// NewVehicle returns a parked car: windows shut, doors locked, AC off at
// 24 °C, volume 12.
func NewVehicle(id string) Vehicle {
	v := Vehicle{ID: id, DoorsLocked: true, AC: AC{Temperature: 24, Fan: 3},
		Windows: map[string]int{}, SeatHeat: map[string]int{},
		Wipers: Wipers{Speed: "low"}, Media: Media{Index: 0, Track: Playlist[0], Volume: 12}}
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

// VehiclePlugins returns the simulated vehicle's plugins by plugin_id
// (plugin.cabin.*), over store.
func VehiclePlugins(store VehicleStore) map[string]Plugin {
	ops := map[string]vehicleOp{
		"plugin.cabin.navigation": navigate,
		"plugin.cabin.navigation.cancel": func(v *Vehicle, _ map[string]string) (map[string]any, error) {
			v.Navigation = Navigation{}
			return nil, nil
		},
		"plugin.cabin.ac.on":          func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.AC.On = true; return acData(v), nil },
		"plugin.cabin.ac.off":         func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.AC.On = false; return acData(v), nil },
		"plugin.cabin.ac_control":     setTemperature,
		"plugin.cabin.fan.up":         func(v *Vehicle, _ map[string]string) (map[string]any, error) { return fan(v, +1), nil },
		"plugin.cabin.fan.down":       func(v *Vehicle, _ map[string]string) (map[string]any, error) { return fan(v, -1), nil },
		"plugin.cabin.defog.front_on": func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.DefogFront = true; return nil, nil },
		"plugin.cabin.defog.rear_on":  func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.DefogRear = true; return nil, nil },
		"plugin.cabin.window.open":    func(v *Vehicle, s map[string]string) (map[string]any, error) { return windows(v, s, opening(s)), nil },
		"plugin.cabin.window.close":   func(v *Vehicle, s map[string]string) (map[string]any, error) { return windows(v, s, 0), nil },
		"plugin.cabin.sunroof.open":   func(v *Vehicle, s map[string]string) (map[string]any, error) { v.Sunroof = opening(s); return nil, nil },
		"plugin.cabin.sunroof.close":  func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.Sunroof = 0; return nil, nil },
		"plugin.cabin.doors.lock":     func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.DoorsLocked = true; return nil, nil },
		"plugin.cabin.doors.unlock":   func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.DoorsLocked = false; return nil, nil },
		"plugin.cabin.music_play":     play,
		"plugin.cabin.music.pause": func(v *Vehicle, _ map[string]string) (map[string]any, error) {
			v.Media.Playing = false
			return nil, nil
		},
		"plugin.cabin.music.next":     func(v *Vehicle, _ map[string]string) (map[string]any, error) { return skip(v, +1), nil },
		"plugin.cabin.music.previous": func(v *Vehicle, _ map[string]string) (map[string]any, error) { return skip(v, -1), nil },
		"plugin.cabin.volume.up":      func(v *Vehicle, _ map[string]string) (map[string]any, error) { return volume(v, +3), nil },
		"plugin.cabin.volume.down":    func(v *Vehicle, _ map[string]string) (map[string]any, error) { return volume(v, -3), nil },
		"plugin.cabin.volume.mute":    func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.Media.Muted = true; return nil, nil },
		"plugin.cabin.lights.on":      func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.Lights = true; return nil, nil },
		"plugin.cabin.lights.off":     func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.Lights = false; return nil, nil },
		"plugin.cabin.seat_heat.on":   func(v *Vehicle, s map[string]string) (map[string]any, error) { return seatHeat(v, s, true), nil },
		"plugin.cabin.seat_heat.off":  func(v *Vehicle, s map[string]string) (map[string]any, error) { return seatHeat(v, s, false), nil },
		"plugin.cabin.mirror.fold":    func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.MirrorsFolded = true; return nil, nil },
		"plugin.cabin.mirror.unfold": func(v *Vehicle, _ map[string]string) (map[string]any, error) {
			v.MirrorsFolded = false
			return nil, nil
		},
		"plugin.cabin.wiper.on":  wipersOn,
		"plugin.cabin.wiper.off": func(v *Vehicle, _ map[string]string) (map[string]any, error) { v.Wipers.On = false; return nil, nil },
	}
	out := make(map[string]Plugin, len(ops))
	for id, op := range ops {
		out[id] = vehiclePlugin(store, op)
	}
	return out
}

// vehiclePlugin runs op on the call's vehicle in one store update.
func vehiclePlugin(store VehicleStore, op vehicleOp) Plugin {
	return PluginFunc(func(ctx context.Context, c Call) (Result, error) {
		var data map[string]any
		_, err := store.UpdateVehicle(ctx, c.Vehicle, func(v *Vehicle) error {
			d, err := op(v, c.Slots)
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
	})
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
		for i, t := range Playlist {
			if matchesTrack(t, q) {
				v.Media.Index, v.Media.Track = i, t
				break
			}
		}
	}
	v.Media.Playing, v.Media.Muted = true, false
	return map[string]any{"track": v.Media.Track, "music": q}, nil
}

// matchesTrack reports whether the query names the track: its title, its
// artist, or "artist的title".
func matchesTrack(track, q string) bool {
	title, artist, _ := strings.Cut(track, " - ")
	q = strings.ToLower(q)
	for _, part := range strings.Split(q, "的") {
		if part != "" && (strings.Contains(strings.ToLower(title), part) || strings.Contains(strings.ToLower(artist), part)) {
			return true
		}
	}
	return false
}

func skip(v *Vehicle, d int) map[string]any {
	i := v.Media.Index
	if i < 0 {
		i = 0
	}
	i = (i + d + len(Playlist)) % len(Playlist)
	v.Media.Index, v.Media.Track, v.Media.Playing = i, Playlist[i], true
	return map[string]any{"track": v.Media.Track}
}

func volume(v *Vehicle, d int) map[string]any {
	v.Media.Volume = min(max(v.Media.Volume+d, 0), 30)
	v.Media.Muted = false
	return map[string]any{"volume": v.Media.Volume}
}
