package server_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/server"
)

// syncBuffer is a log sink that tests read after the server wrote to it
// from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAuthThrottle: 1,000 wrong keys from one address get a burst of
// 401s, then 429 with Retry-After, the right key from that address too
// while its bucket is empty; the right key from another address is
// served, another address's wrong key is a 401 again, and an IPv6 client
// is throttled by its /64. The log names the address and never the key.
func TestAuthThrottle(t *testing.T) {
	const good = "good-key-0123456789"
	var logs syncBuffer
	srv, err := server.New(context.Background(), server.Options{Agents: testAgents(t), Keys: []string{good},
		Database: filepath.Join(t.TempDir(), "loom.db"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h := srv.Handler()
	send := func(addr, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/assistants/echo", nil)
		req.Host = "localhost"
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := send("192.0.2.1:4000", good); rec.Code != 200 {
		t.Fatalf("the right key: %d %s", rec.Code, rec.Body)
	}

	began := time.Now()
	var unauthorized, tooMany int
	wrongKeys := map[string]bool{}
	for i := range 1000 {
		key := fmt.Sprintf("wrong-key-%06d", i)
		wrongKeys[key] = true
		rec := send(fmt.Sprintf("192.0.2.1:%d", 5000+i), key) // one address, many ports
		switch rec.Code {
		case http.StatusUnauthorized:
			unauthorized++
			if tooMany > 0 && unauthorized > 20+int(time.Since(began).Seconds())+1 {
				t.Fatalf("wrong key %d: 401 after the burst and %d 429s", i, tooMany)
			}
		case http.StatusTooManyRequests:
			tooMany++
			if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("wrong key %d: 429 with Retry-After %q", i, rec.Header().Get("Retry-After"))
			}
			if !strings.Contains(rec.Body.String(), "too_many_failures") {
				t.Fatalf("wrong key %d: 429 %s", i, rec.Body)
			}
		default:
			t.Fatalf("wrong key %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	t.Logf("1,000 wrong keys from one address in %s: %d answered 401, %d 429", time.Since(began).Round(time.Millisecond), unauthorized, tooMany)
	// The bucket holds 20 tries and earns one back a second.
	if unauthorized < 20 || unauthorized > 20+int(time.Since(began).Seconds())+1 || tooMany == 0 {
		t.Errorf("1,000 wrong keys: %d answered 401, %d 429", unauthorized, tooMany)
	}
	if rec := send("192.0.2.1:6000", good); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("the right key from the throttled address: %d %s, want 429 until its bucket refills", rec.Code, rec.Body)
	}
	if rec := send("198.51.100.7:4000", good); rec.Code != 200 {
		t.Errorf("the right key from another address: %d %s", rec.Code, rec.Body)
	}
	if rec := send("198.51.100.7:4000", "another-wrong-key"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key from another address: %d %s, want 401", rec.Code, rec.Body)
	}
	if rec := send("192.0.2.1:4000", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key from the throttled address: %d %s, want 401", rec.Code, rec.Body)
	}

	// IPv6: the addresses of one /64 share a bucket; another /64 has its own.
	for i := range 25 {
		send(fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1), "wrong-v6-key")
	}
	if rec := send("[2001:db8:1:2:ffff::1]:4000", good); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the right key from the throttled /64: %d %s", rec.Code, rec.Body)
	}
	if rec := send("[2001:db8:1:3::1]:4000", good); rec.Code != 200 {
		t.Errorf("the right key from another /64: %d %s", rec.Code, rec.Body)
	}

	log := logs.String()
	for key := range wrongKeys {
		if strings.Contains(log, key) {
			t.Fatalf("the log names a key tried: %s", key)
		}
	}
	if strings.Contains(log, good) {
		t.Error("the log names the right key")
	}
	if !strings.Contains(log, "authentication failed") || !strings.Contains(log, "192.0.2.1") || !strings.Contains(log, "throttled") {
		t.Errorf("the log does not name the failures and their address:\n%.2000s", log)
	}
	// Logged per failure while it has tries, then once: not 1,000 lines.
	if n := strings.Count(log, "192.0.2.1"); n > 60 {
		t.Errorf("the log has %d lines about 192.0.2.1", n)
	}
}
