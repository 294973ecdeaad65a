package server

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAuthThrottleBounded: a client cycling through three times as many
// addresses as the throttle remembers leaves it at its bound, and an
// address whose bucket refilled is forgotten before a throttled one.
func TestAuthThrottleBounded(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	th := newAuthThrottle(slog.New(slog.DiscardHandler))
	th.now = func() time.Time { return now }
	req := httptest.NewRequest("GET", "/threads", nil)
	addr := func(i int) string { return fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255) }
	for i := range 3 * authAddrs {
		req.RemoteAddr = addr(i)
		th.failed(clientAddr(req), req)
		if len(th.addrs) > authAddrs {
			t.Fatalf("after %d addresses the throttle remembers %d, more than %d", i+1, len(th.addrs), authAddrs)
		}
	}
	// A throttled address, then one whose one failure is long repaid.
	th = newAuthThrottle(slog.New(slog.DiscardHandler))
	th.now = func() time.Time { return now }
	req.RemoteAddr = "192.0.2.9:1"
	bad := clientAddr(req)
	for range authBurst {
		th.failed(bad, req)
	}
	if th.wait(bad) <= 0 {
		t.Fatalf("%d wrong keys: not throttled", authBurst)
	}
	for i := range authAddrs - 1 {
		req.RemoteAddr = addr(i)
		th.failed(clientAddr(req), req)
	}
	now = now.Add(2 * time.Second)
	th.failed(bad, req)            // one try earned back and spent
	now = now.Add(2 * time.Second) // the others' buckets are full again; bad's is not
	req.RemoteAddr = "198.51.100.1:1"
	th.failed(clientAddr(req), req)
	if _, ok := th.addrs[bad]; !ok || len(th.addrs) != 2 {
		t.Errorf("with the map full, the throttle kept the throttled address: %t, and %d addresses, want it and the new one", ok, len(th.addrs))
	}
	if req.RemoteAddr = "[::ffff:192.0.2.9]:1"; clientAddr(req) != bad {
		t.Errorf("a v4-mapped address is %v, not %v", clientAddr(req), bad)
	}
}
