package schedule

import (
	"fmt"
	"strings"
	"testing"
)

// qualityRow is one generated week's figures.
type qualityRow struct {
	seed               uint64
	items, placed      int
	slots, placedSlots int
	before, after      float64
	steps              int
}

// quality runs the rough schedule and the optimiser on the generated
// weeks of seeds 1…n.
func quality(n int) []qualityRow {
	var rows []qualityRow
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s := Generate(seed)
		row := qualityRow{seed: seed, items: len(s.Items)}
		for _, it := range s.Items {
			row.slots += it.Slots
		}
		RoughSchedule(s, RoughOptions{})
		for _, it := range s.Items {
			if it.Placed() {
				row.placed++
				row.placedSlots += it.Slots
			}
		}
		row.before = Measure(s).Health()
		row.steps = len(Optimize(s, 200))
		row.after = Measure(s).Health()
		rows = append(rows, row)
	}
	return rows
}

// The quality figures of README.md: on 20 generated weeks, the share of
// pending items the rough schedule places, and the health score before and
// after the optimiser. Run with -v to see the table.
func TestQuality(t *testing.T) {
	rows := quality(20)
	var b strings.Builder
	b.WriteString("| seed | items | placed | slots placed | health rough | health optimised | steps |\n|---|---|---|---|---|---|---|\n")
	var items, placed, slots, placedSlots, steps int
	var before, after float64
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %d | %d/%d | %.1f | %.1f | %d |\n", r.seed, r.items, r.placed, r.placedSlots, r.slots, r.before, r.after, r.steps)
		items += r.items
		placed += r.placed
		slots += r.slots
		placedSlots += r.placedSlots
		before += r.before
		after += r.after
		steps += r.steps
		if r.after < r.before {
			t.Errorf("seed %d: the optimiser lowered the health %.1f → %.1f", r.seed, r.before, r.after)
		}
	}
	n := float64(len(rows))
	fmt.Fprintf(&b, "| all | %d | %d (%.1f%%) | %d/%d (%.1f%%) | %.1f | %.1f | %.1f |\n", items, placed, 100*float64(placed)/float64(items),
		placedSlots, slots, 100*float64(placedSlots)/float64(slots), before/n, after/n, float64(steps)/n)
	t.Log("\n" + b.String())
	if share := float64(placed) / float64(items); share < 0.9 {
		t.Errorf("rough schedule placed %.1f%% of the items, want at least 90%%", 100*share)
	}
	if after <= before {
		t.Errorf("mean health %.1f → %.1f: the optimiser does not help", before/n, after/n)
	}
}
