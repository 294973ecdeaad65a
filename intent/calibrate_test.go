package intent_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestCalibrate(t *testing.T) {
	for _, c := range []struct {
		name      string
		oosWeight float64
	}{
		{"balanced", 0.2},
		{"recall first", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, cal, err := intent.Calibrate(context.Background(), cabinConfig(), intent.CalibrateOptions{HoldOut: 0.34, OOSWeight: c.oosWeight})
			if err != nil {
				t.Fatal(err)
			}
			// 13 intents of 5 or 6 examples: 2 of each held out.
			if cal.HeldOut != 26 || cal.HeldOutOOS != 2 {
				t.Errorf("held out %d (%d out of scope), want 26 (2)", cal.HeldOut, cal.HeldOutOOS)
			}
			f := cfg.Fusion
			if f.ExecuteThreshold != cal.Fusion.ExecuteThreshold || f.RouteToCloudThreshold != cal.Fusion.RouteToCloudThreshold || f.RouteToCloudThreshold > f.ExecuteThreshold || f.ExecuteThreshold < 0.4 || f.ExecuteThreshold > 3 {
				t.Errorf("thresholds %+v", f)
			}
			if c.oosWeight > 1 && cal.OOSRecall < 1 {
				t.Errorf("weighing recall first left out-of-scope recall at %.2f", cal.OOSRecall)
			}
			if _, err := intent.New(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
}
