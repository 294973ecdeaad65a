package server

import (
	"net/http"
	"strings"
	"testing"
)

// runBody is a run request as the official client sends one.
const runBody = `{"assistant_id":"cabin","input":{"text":"打开车窗","user_id":"u1"},"stream_mode":["values","messages-tuple"],"metadata":{"from":"bench"},"multitask_strategy":"enqueue","context":{"locale":"en"}}`

// BenchmarkDecodeRun compares decoding a run request that drops unknown
// fields (decode) with the one that refuses them (decodeKnown).
func BenchmarkDecodeRun(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(*http.Request, *runRequest) error
	}{
		{"decode", func(r *http.Request, v *runRequest) error { return decode(r, v) }},
		{"decodeKnown", func(r *http.Request, v *runRequest) error { return decodeKnown(r, "run", v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r, _ := http.NewRequest("POST", "/runs", strings.NewReader(runBody))
				var req runRequest
				if err := c.f(r, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestDecodeKnownNamesField(t *testing.T) {
	r, _ := http.NewRequest("POST", "/runs", strings.NewReader(`{"assistant_id":"x","colour":1}`))
	var req runRequest
	err := decodeKnown(r, "run", &req)
	if ae := toAPI(err); err == nil || ae.status != 422 || !strings.Contains(ae.message, `"colour"`) {
		t.Fatalf("unknown field: %v, want a 422 naming colour", err)
	}
	r, _ = http.NewRequest("POST", "/runs", strings.NewReader(`{"assistant_id":5}`))
	if ae := toAPI(decodeKnown(r, "run", &req)); ae.status != 400 {
		t.Fatalf("a wrong type: %d, want 400 as decode gives", ae.status)
	}
}
