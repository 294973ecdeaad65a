package report_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/checkpoint"
)

// ExampleAgent designs without a model: an uploaded template becomes the
// first version, a preview skips validation, and reset clears the design.
func ExampleAgent() {
	ctx := context.Background()
	st := report.NewMemoryStore()
	st.PutUpload(ctx, report.Upload{ID: "up-1", Thread: "t1", Name: "sales.jrxml", Kind: report.KindJRXML, Data: []byte(goodJRXML)})
	a, err := report.New(ctx, report.Config{Store: st})
	if err != nil {
		panic(err)
	}
	g, err := a.Compile(checkpoint.NewMemory())
	if err != nil {
		panic(err)
	}
	for _, in := range []report.Input{{Upload: "up-1"}, {Message: "preview"}, {Message: "重置"}} {
		res, err := g.Invoke(ctx, "t1", func(s *report.State) { s.Message, s.Upload = in.Message, in.Upload })
		if err != nil {
			panic(err)
		}
		t := res.State.Turn
		fmt.Printf("%s by %s: status %q, version %d, template %t\n", t.Intent, t.By, t.Status, res.State.Version, res.State.JRXML != "")
	}
	// Output:
	// initial_generation by upload: status "pass", version 1, template true
	// preview_report by local: status "", version 1, template true
	// reset_session by local: status "", version 1, template false
}
