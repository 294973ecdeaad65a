package report_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/report"
)

// BenchmarkTurnNoModel: one turn with no model over HTTP on SQLite
// through /runs/wait, in turn a reset, an undo of it (back to the
// template) and a preview; reports the p50 and p99 of a turn.
func BenchmarkTurnNoModel(b *testing.B) {
	l := serve(b, nil, filepath.Join(b.TempDir(), "loom.db"), report.ServerOptions{})
	id := l.uploadID("bench", "sales.jrxml", []byte(goodJRXML))
	if st := l.run("bench", report.Input{Upload: id}).state; st.Final == "" {
		b.Fatalf("no template: %q", st.Turn.Reply)
	}
	msgs := []string{"重置", "撤销", "预览报表"}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		began := time.Now()
		code, body := l.Do(keyA, "POST", "/threads/bench/runs/wait", map[string]any{"assistant_id": "report", "input": report.Input{Message: msgs[i%3]}})
		times = append(times, time.Since(began))
		if code != 200 {
			b.Fatalf("turn: %d %s", code, body)
		}
	}
	b.StopTimer()
	if st := l.state("bench"); st.JRXML != goodJRXML && b.N%3 != 1 {
		b.Fatalf("the template is lost after %d turns: %q", b.N, st.Turn.Reply)
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}
