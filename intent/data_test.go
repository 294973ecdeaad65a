package intent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/intent/dataset"
	"github.com/loomkit/loom/internal/testenv"
)

// dataDir is the shared data folder beside the repository. Missing, it
// skips the test, except under CI where it is a failure.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		abs, _ := filepath.Abs(dir)
		testenv.Need(t, fmt.Sprintf("data folder %s not found", abs), err)
	}
	return dir
}

// TestAccuracyOnPublicData runs what `loom eval intent --train FILE` runs
// and holds the figures a little below those measured (training is
// deterministic, so a drop means a change for the worse).
func TestAccuracyOnPublicData(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on 25k examples")
	}
	dir := dataDir(t)
	for _, c := range []struct {
		file      string
		accuracy  float64
		oosRecall float64 // 0: the data has no out-of-scope examples
	}{
		{"clinc150/clinc150_train_val.json", 0.92, 0.65}, // measured 92.80%, 71%
		{"banking77/train.csv", 0.90, 0},                 // measured 90.74%
		{"smp2019/smp2019_dev.json", 0.90, 0},            // measured 90.81%
	} {
		t.Run(filepath.Dir(c.file), func(t *testing.T) {
			s, err := dataset.Load(filepath.Join(dir, c.file), "")
			if err != nil {
				t.Fatal(err)
			}
			train, test := s.Train, s.Val
			if len(test) == 0 {
				train, test = intent.HoldOut(s.Train, 0.2, 1)
			}
			ctx := context.Background()
			cfg, _, err := intent.Calibrate(ctx, intent.Config{Intents: intent.IntentsFrom(train)}, intent.CalibrateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e, err := intent.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := intent.Evaluate(ctx, e, test)
			if err != nil {
				t.Fatal(err)
			}
			recall := "n/a"
			if rep.OOSRecall != nil {
				recall = fmt.Sprintf("%.4f", *rep.OOSRecall)
			}
			t.Logf("in-scope accuracy %.4f, macro-F1 %.4f, oos recall %s, p50 %v, p99 %v", rep.InScopeAccuracy, rep.MacroF1, recall, rep.P50, rep.P99)
			if rep.InScopeAccuracy < c.accuracy {
				t.Errorf("in-scope accuracy %.4f < %.2f", rep.InScopeAccuracy, c.accuracy)
			}
			if c.oosRecall > 0 && (rep.OOSRecall == nil || *rep.OOSRecall < c.oosRecall) {
				t.Errorf("out-of-scope recall %v < %.2f", rep.OOSRecall, c.oosRecall)
			}
		})
	}
}
