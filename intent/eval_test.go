package intent_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestEvaluate(t *testing.T) {
	rep, err := intent.Evaluate(context.Background(), newCabin(t), []intent.Example{
		{Text: "打开空调", Intent: "cabin_ac_on"},     // right
		{Text: "把空调调到22度", Intent: "cabin_ac_on"}, // predicted cabin_set_ac: a miss and a false alarm
		{Text: "xyz", Intent: "cabin_call"},       // rejected: a miss
		{Text: "今天股市怎么样", Intent: "oos"},          // caught
		{Text: "帮我打开空调", Intent: "oos"},           // executed: not caught
	})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// F1: cabin_ac_on 2·1/(2·1+1+1) = 1/2 (the executed oos example is its
	// false alarm), cabin_call 0; cabin_set_ac was never the truth and is
	// not in the mean.
	if rep.N != 5 || rep.InScope != 3 || rep.OutOfScope != 2 || !near(rep.InScopeAccuracy, 1.0/3) || !near(rep.MacroF1, 0.25) ||
		rep.OOSRecall == nil || !near(*rep.OOSRecall, 0.5) || rep.P99 < rep.P50 || rep.P50 <= 0 {
		t.Errorf("report %+v, oos recall %v", rep, rep.OOSRecall)
	}
	if rep.Decisions[intent.Execute]+rep.Decisions[intent.Reject]+rep.Decisions[intent.Clarify]+rep.Decisions[intent.RouteToCloud] != 5 {
		t.Errorf("decisions %v do not add up to 5", rep.Decisions)
	}
	rep, err = intent.Evaluate(context.Background(), newCabin(t), []intent.Example{{Text: "打开空调", Intent: "cabin_ac_on"}})
	if err != nil || rep.OOSRecall != nil || rep.InScopeAccuracy != 1 || rep.MacroF1 != 1 {
		t.Errorf("in-scope only: %+v, %v", rep, err)
	}
}

func TestHoldOut(t *testing.T) {
	var all []intent.Example
	for i := range 100 {
		all = append(all, intent.Example{Text: fmt.Sprint("a", i), Intent: "a"})
		if i < 10 {
			all = append(all, intent.Example{Text: fmt.Sprint("b", i), Intent: "b"})
		}
	}
	all = append(all, intent.Example{Text: "c0", Intent: "c"})
	train, held := intent.HoldOut(all, 0.2, 7)
	count := func(ex []intent.Example) map[string]int {
		m := map[string]int{}
		for _, e := range ex {
			m[e.Intent]++
		}
		return m
	}
	tr, he := count(train), count(held)
	if he["a"] != 20 || he["b"] != 2 || he["c"] != 0 || tr["c"] != 1 || len(train)+len(held) != len(all) {
		t.Errorf("held %v, train %v", he, tr)
	}
	train2, held2 := intent.HoldOut(all, 0.2, 7)
	_, held3 := intent.HoldOut(all, 0.2, 8)
	if fmt.Sprint(train2, held2) != fmt.Sprint(train, held) || fmt.Sprint(held3) == fmt.Sprint(held) {
		t.Error("the split does not depend on the seed alone")
	}
}
