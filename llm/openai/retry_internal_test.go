package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{"none", http.Header{}, 0, false},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second, true},
		{"fractional seconds", http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"http date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{"http date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, 1500 * time.Millisecond, true},
		{"bad milliseconds fall back", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{"negative", http.Header{"Retry-After": {"-5"}}, 0, false},
		{"garbage", http.Header{"Retry-After": {"tomorrow-ish"}}, 0, false},
		{"huge saturates", http.Header{"Retry-After": {"1e300"}}, time.Duration(1<<63 - 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryAfter(tt.header, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt  int
		jitter   float64
		min, max time.Duration
	}{
		{0, 0, 250 * time.Millisecond, 250 * time.Millisecond},
		{0, 0.999, 250 * time.Millisecond, 500 * time.Millisecond},
		{1, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{3, 0.5, 3 * time.Second, 3 * time.Second},
		{4, 0, 4 * time.Second, 4 * time.Second}, // capped at 8s, halved
		{60, 0.999, 4 * time.Second, 8 * time.Second},
	}
	for _, tt := range tests {
		m := &Model{jitter: func() float64 { return tt.jitter }}
		if got := m.backoff(tt.attempt); got < tt.min || got > tt.max {
			t.Errorf("backoff(%d) with jitter %v = %v, want in [%v, %v]", tt.attempt, tt.jitter, got, tt.min, tt.max)
		}
	}
}
