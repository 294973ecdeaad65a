package schedule

import (
	"fmt"
	"math/rand/v2"
)

// DefaultOwner is the owner of the sample schedule, and of the agent's
// schedule unless configured otherwise.
const DefaultOwner = "demo"

// Sample returns the schedule a new user starts with: a student's next
// week (week 2 of term) with eleven timetable entries and three task classes of pending
// items — 高数复习 (steady, mornings, never on Sunday), 英语阅读 (steady,
// evenings) and 物理作业 (rapid, afternoons, not at the weekend).
func Sample(owner string) *Schedule {
	s := &Schedule{
		Owner:  owner,
		Window: Window{StartWeek: 2, StartDay: 1, Days: 7, DailyMax: 6},
	}
	course := func(id int, name string, day, start, slots int, locked, embed bool) {
		s.Events = append(s.Events, Event{ID: id, Name: name, Day: day, Start: start, Slots: slots, Locked: locked, CanEmbed: embed})
	}
	course(1, "高等数学", 0, 0, 2, true, false)
	course(2, "大学物理", 0, 4, 2, true, false)
	course(3, "线性代数", 1, 0, 2, true, false)
	course(4, "大学英语", 1, 2, 2, true, false)
	course(5, "高等数学", 2, 0, 2, true, false)
	course(6, "形势与政策", 2, 6, 2, true, true)
	course(7, "社团活动", 2, 9, 2, false, false)
	course(8, "大学英语", 3, 2, 2, true, false)
	course(9, "大学物理", 3, 4, 2, true, false)
	course(10, "线性代数", 4, 2, 2, true, false)
	course(11, "体育", 4, 6, 2, true, false)
	s.Classes = []TaskClass{
		{ID: 20, Name: "高数复习", Profile: Profile{Subject: "数学", Difficulty: 3, Prefer: periodMorning}, ExcludedDays: []int{7}, Strategy: strategySteady},
		{ID: 21, Name: "英语阅读", Profile: Profile{Subject: "英语", Difficulty: 1, Prefer: periodEvening}, Strategy: strategySteady},
		{ID: 22, Name: "物理作业", Profile: Profile{Subject: "物理", Difficulty: 2, Prefer: periodAfternoon}, ExcludedDays: []int{6, 7}, Strategy: strategyRapid},
	}
	id := 100
	item := func(class int, name string, n, slots int) {
		for k := 1; k <= n; k++ {
			s.Items = append(s.Items, Item{ID: id, Class: class, Name: fmt.Sprintf("%s#%d", name, k), Slots: slots, Status: statusPending})
			id++
		}
	}
	item(20, "高数复习", 4, 2)
	item(21, "英语阅读", 3, 1)
	item(22, "物理作业", 3, 2)
	return s
}

// Generate returns a random week for tests and figures: Monday to Friday
// two to five courses a day of two slots (some embeddable, most locked), a
// daily maximum of 4 to 6 task slots, three task classes with random
// profiles, strategies and excluded days, and 3 to 8 pending items of 1 to
// 3 slots per class. The same seed gives the same week.
func Generate(seed uint64) *Schedule {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &Schedule{Owner: fmt.Sprintf("gen-%d", seed), Window: Window{StartWeek: 1, StartDay: 1, Days: 7, DailyMax: 4 + r.IntN(3)}}
	names := []string{"高等数学", "大学英语", "大学物理", "线性代数", "程序设计", "概率论", "思想政治", "大学化学"}
	id := 1
	for day := range 5 {
		starts := r.Perm(6)[:2+r.IntN(4)]
		for _, k := range starts {
			s.Events = append(s.Events, Event{ID: id, Name: names[r.IntN(len(names))], Day: day, Start: 2 * k, Slots: 2,
				Locked: r.IntN(10) > 0, CanEmbed: r.IntN(7) == 0})
			id++
		}
	}
	subjects := []string{"数学", "英语", "物理", "编程", "化学"}
	periods := []string{periodMorning, periodAfternoon, periodEvening, periodAny}
	for c := range 3 {
		class := TaskClass{ID: id, Name: fmt.Sprintf("%s任务", subjects[(int(seed)+c)%len(subjects)]),
			Profile:  Profile{Subject: subjects[(int(seed)+c)%len(subjects)], Difficulty: 1 + r.IntN(3), Prefer: periods[r.IntN(len(periods))]},
			Strategy: []string{strategySteady, strategyRapid}[r.IntN(2)]}
		for range r.IntN(3) {
			if d := 1 + r.IntN(7); !class.Excludes(d) {
				class.ExcludedDays = append(class.ExcludedDays, d)
			}
		}
		s.Classes = append(s.Classes, class)
		id++
	}
	for _, c := range s.Classes {
		for k := range 3 + r.IntN(6) {
			s.Items = append(s.Items, Item{ID: id, Class: c.ID, Name: fmt.Sprintf("%s#%d", c.Name, k+1), Slots: 1 + r.IntN(3), Status: statusPending})
			id++
		}
	}
	return s
}
