package schedule

import (
	"fmt"
	"testing"
)

// week100 is a generated week with 100 pending items of 1 or 2 slots over
// its three classes: more than the 7 days can hold.
func week100() *Schedule {
	s := Generate(1)
	s.Items = nil
	for i := range 100 {
		c := s.Classes[i%len(s.Classes)]
		s.Items = append(s.Items, Item{ID: 1000 + i, Class: c.ID, Name: fmt.Sprintf("%s#%d", c.Name, i/3+1), Slots: 1 + i%2, Status: statusPending})
	}
	return s
}

func BenchmarkRoughSchedule(b *testing.B) {
	base := week100()
	placed := 0
	for b.Loop() {
		s := base.Clone()
		placed = len(RoughSchedule(s, RoughOptions{}))
	}
	b.ReportMetric(float64(placed), "placed")
}

// BenchmarkOptimizeStep is one step of the optimiser: a scan of every move
// and swap, and the best applied, on a rough-scheduled generated week of 20
// items, and on the 100-item week, whose days are full.
func BenchmarkOptimizeStep(b *testing.B) {
	for _, bc := range []struct {
		name string
		week *Schedule
	}{{"week", Generate(13)}, {"100items", week100()}} {
		RoughSchedule(bc.week, RoughOptions{})
		b.Run(bc.name, func(b *testing.B) {
			applied := 0
			for b.Loop() {
				if _, ok := optimizeStep(bc.week.Clone()); ok {
					applied = 1
				}
			}
			b.ReportMetric(float64(applied), "applied")
		})
	}
}

// BenchmarkAnalyze is one analyze_health call on the sample week: two
// refined placements of its ten pending items.
func BenchmarkAnalyze(b *testing.B) {
	s := Sample(DefaultOwner)
	for b.Loop() {
		Analyze(s, ScanOptions{})
	}
}
