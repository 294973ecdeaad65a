package schedule

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// Timetable is a week as data, for clients (GET /api/v1/schedule/week): the
// days of the window with their courses and placed tasks in slot order,
// the tasks still pending, and the times the owner keeps free.
type Timetable struct {
	Owner    string  `json:"owner"`
	Revision int64   `json:"revision"`
	Window   Window  `json:"window"`
	Health   float64 `json:"health"`
	// Slots are the periods of every day, in order: a week's grid is
	// Days × Slots.
	Slots []Slot `json:"slots"`
	Days  []Day  `json:"days"`
	// Pending are the tasks without a place yet.
	Pending []Entry `json:"pending"`
	// Avoid are the times kept free, as the owner last said.
	Avoid []Avoid `json:"avoid"`
	// AvoidText says them for people ("周三晚上、周日全天").
	AvoidText string `json:"avoid_text,omitempty"`
}

// Slot is one period of a day in a Timetable.
type Slot struct {
	// Slot is the period's number, from 1.
	Slot int `json:"slot"`
	// Time is its clock time ("08:00-08:45").
	Time string `json:"time"`
}

// Day is one day of a Timetable.
type Day struct {
	// Day is the day of the window, from 1.
	Day       int    `json:"day"`
	Week      int    `json:"week"`
	DayOfWeek int    `json:"day_of_week"`
	Name      string `json:"name"`
	// Entries are the day's courses and tasks, by first slot (a course
	// before a task embedded in it).
	Entries []Entry `json:"entries"`
}

// Entry is a course or a task in a Timetable.
type Entry struct {
	ID int `json:"id"`
	// Kind is "course" (a timetable event) or "task" (a study task).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Class is a task's class (高数复习).
	Class string `json:"class,omitempty"`
	// From and To are the first and last slot, from 1 (0 while pending).
	From  int `json:"from_slot,omitempty"`
	To    int `json:"to_slot,omitempty"`
	Slots int `json:"slots"`
	// Time is the clock time the slots cover ("08:00-09:40").
	Time string `json:"time,omitempty"`
	// Where says the position for people ("周五（第2周） 第1-2节").
	Where    string `json:"where,omitempty"`
	Locked   bool   `json:"locked,omitempty"`
	CanEmbed bool   `json:"can_embed,omitempty"`
	// Avoided: a task on a time the owner keeps free.
	Avoided bool `json:"avoided,omitempty"`
	// In is, for a task that shares slots with a course that lets one be
	// embedded (can_embed), that course's id.
	In int `json:"in,omitempty"`
}

// Kinds of a timetable entry.
const (
	entryCourse = "course"
	entryTask   = "task"
)

// slotTime is the clock time slots [from, to) cover, from 0.
func slotTime(from, to int) string {
	end := slotStarts[to-1] + 45
	return fmt.Sprintf("%02d:%02d-%02d:%02d", slotStarts[from]/60, slotStarts[from]%60, end/60, end%60)
}

// Timetable returns s as a Timetable, with the times avoid keeps free.
func (s *Schedule) Timetable(avoid []Avoid) Timetable {
	avoid = normalizeAvoids(avoid)
	sc := newScoring("", avoid)
	t := Timetable{Owner: s.Owner, Revision: s.Revision, Window: s.Window, Health: round1(Measure(s).Health()),
		Days: make([]Day, s.Window.Days), Pending: []Entry{}, Avoid: avoid, AvoidText: avoidList(avoid)}
	if t.Avoid == nil {
		t.Avoid = []Avoid{}
	}
	t.Slots = make([]Slot, SlotsPerDay)
	for k := range t.Slots {
		t.Slots[k] = Slot{Slot: k + 1, Time: slotTime(k, k+1)}
	}
	for d := range t.Days {
		ref := s.Window.Day(d)
		t.Days[d] = Day{Day: d + 1, Week: ref.Week, DayOfWeek: ref.DayOfWeek, Name: s.DayName(d), Entries: []Entry{}}
	}
	for _, e := range s.Events {
		if e.Day < 0 || e.Day >= s.Window.Days {
			continue
		}
		t.Days[e.Day].Entries = append(t.Days[e.Day].Entries, Entry{ID: e.ID, Kind: entryCourse, Name: e.Name, From: e.Start + 1, To: e.Start + e.Slots,
			Slots: e.Slots, Time: slotTime(e.Start, e.Start+e.Slots), Where: s.Where(e.Day, e.Start, e.Slots), Locked: e.Locked, CanEmbed: e.CanEmbed})
	}
	for _, it := range s.Items {
		en := Entry{ID: it.ID, Kind: entryTask, Name: it.Name, Slots: it.Slots}
		if c := s.Class(it.Class); c != nil {
			en.Class = c.Name
		}
		if !it.Placed() {
			t.Pending = append(t.Pending, en)
			continue
		}
		en.From, en.To, en.Time = it.Start+1, it.Start+it.Slots, slotTime(it.Start, it.Start+it.Slots)
		en.Where, en.Avoided = s.Where(it.Day, it.Start, it.Slots), sc.blocks(s.Window, it.Day, it.Start, it.Slots)
		for _, e := range s.Events {
			if e.CanEmbed && e.Day == it.Day && e.Start < it.Start+it.Slots && it.Start < e.Start+e.Slots {
				en.In = e.ID
			}
		}
		t.Days[it.Day].Entries = append(t.Days[it.Day].Entries, en)
	}
	for d := range t.Days {
		slices.SortStableFunc(t.Days[d].Entries, func(a, b Entry) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
		})
	}
	return t
}

// Week returns the timetable of the owner of ctx (server.Caller, else
// Config.Owner), with the times they keep free.
func (a *Agent) Week(ctx context.Context) (Timetable, error) {
	sch, err := a.load(ctx)
	if err != nil {
		return Timetable{}, fmt.Errorf("schedule week: %w", err)
	}
	avoid, err := a.cfg.Store.constraints(ctx, a.owner(ctx))
	if err != nil {
		return Timetable{}, fmt.Errorf("schedule week: %w", err)
	}
	return sch.Timetable(avoid), nil
}

// runner is the agent's compiled graph with the agent, for its routes.
type runner struct {
	graph.Runner
	agent *Agent
}

// constraintsBody is the body of the constraints endpoint.
type constraintsBody struct {
	Avoid []Avoid `json:"avoid"`
	Text  string  `json:"text,omitempty"`
}

// routes serves the agent's own endpoints, behind the API's keys: the
// caller's week and the times they keep free.
func routes(srv *server.Server, a *Agent) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/v1/schedule/week", func(w http.ResponseWriter, r *http.Request) {
		t, err := a.Week(r.Context())
		if err != nil {
			srv.Fail(w, r, err)
			return
		}
		writeJSON(w, t)
	})
	m.HandleFunc("GET /api/v1/schedule/constraints", func(w http.ResponseWriter, r *http.Request) {
		avoid, err := a.cfg.Store.constraints(r.Context(), a.owner(r.Context()))
		if err != nil {
			srv.Fail(w, r, err)
			return
		}
		writeJSON(w, constraintsBody{Avoid: nonNil(avoid), Text: avoidList(avoid)})
	})
	m.HandleFunc("PUT /api/v1/schedule/constraints", func(w http.ResponseWriter, r *http.Request) {
		var body constraintsBody
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			server.WriteError(w, http.StatusBadRequest, "invalid_body", `the body must be {"avoid": [{"day_of_week": 3, "from_slot": 9, "to_slot": 12}, …]}`)
			return
		}
		if len(body.Avoid) > maxAvoids {
			server.WriteError(w, http.StatusBadRequest, "invalid_avoid", fmt.Sprintf("%d times to keep free: at most %d", len(body.Avoid), maxAvoids))
			return
		}
		for _, av := range body.Avoid {
			if err := av.valid(); err != nil {
				server.WriteError(w, http.StatusBadRequest, "invalid_avoid", err.Error())
				return
			}
		}
		if err := a.cfg.Store.setConstraints(r.Context(), a.owner(r.Context()), body.Avoid); err != nil {
			srv.Fail(w, r, err)
			return
		}
		avoid := normalizeAvoids(body.Avoid)
		writeJSON(w, constraintsBody{Avoid: nonNil(avoid), Text: avoidList(avoid)})
	})
	return m
}

// maxAvoids bounds the times to keep free a client may set: a slot range
// of every day twice over is more than a week has.
const maxAvoids = 2 * 7 * SlotsPerDay

// valid says what is wrong with an avoid from a client.
func (a Avoid) valid() error {
	switch {
	case a.Day < 1 || a.Day > 7:
		return fmt.Errorf("day_of_week %d: must be 1 (Monday) to 7 (Sunday)", a.Day)
	case a.From == 0 && a.To == 0:
		return nil
	case a.From < 1 || a.To > SlotsPerDay || a.To < a.From:
		return fmt.Errorf("slots %d to %d: from_slot and to_slot must be 1 to %d, from_slot first", a.From, a.To, SlotsPerDay)
	}
	return nil
}

func nonNil(avoid []Avoid) []Avoid {
	if avoid == nil {
		return []Avoid{}
	}
	return avoid
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // a client gone away hears nothing more

}
