package server

import (
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// This file throttles failed authentication: a client that tries wrong
// API keys gets a few at once, then one a second.

const (
	// authBurst is how many wrong keys one client address may try at
	// once.
	authBurst = 20
	// authRefill is how fast an address earns a try back.
	authRefill = rate.Limit(1) // a second
	// authAddrs bounds the addresses remembered.
	authAddrs = 10_000
)

// authThrottle is a token bucket per client address that wrong keys take
// from. While an address's bucket is empty every request from it that
// presents a key is refused with 429 before the key is looked at, the
// right key too: otherwise a client guessing keys would learn which guess
// is right at full speed. A bucket refills at authRefill, so an address
// that stops trying wrong keys is served again within authBurst seconds
// (a person on the machine too); nothing is locked out for longer.
//
// An address is the connection's remote IP (the server trusts no
// forwarding header), an IPv6 address its /64, since one host may hold a
// whole /64. At most authAddrs addresses are remembered: a full bucket is
// the same as none and is dropped first, then a random one, so a client
// cycling addresses cannot grow the map.
type authThrottle struct {
	mu    sync.Mutex
	addrs map[netip.Prefix]*authBucket
	now   func() time.Time
	log   *slog.Logger
	swept time.Time // when makeRoom last looked for full buckets
}

// authBucket is one address's bucket.
type authBucket struct {
	lim       *rate.Limiter
	throttled bool // logged as throttled; logged again once it refills
}

func newAuthThrottle(log *slog.Logger) *authThrottle {
	return &authThrottle{addrs: map[netip.Prefix]*authBucket{}, now: time.Now, log: log}
}

// clientAddr is the throttle's key for r: its remote IP, an IPv6 one as
// its /64. A remote address that is not an IP (a test's, a Unix socket's)
// is the zero prefix, one bucket for all of them.
func clientAddr(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// wait is how long addr must wait before it may present a key: 0 when it
// may now.
func (t *authThrottle) wait(addr netip.Prefix) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.addrs[addr]
	if b == nil {
		return 0
	}
	now := t.now()
	tokens := b.lim.TokensAt(now)
	if tokens >= 1 {
		if b.throttled && tokens >= authBurst {
			b.throttled = false
		}
		return 0
	}
	return time.Duration((1 - tokens) / float64(authRefill) * float64(time.Second))
}

// failed records a wrong key from addr, and logs it with the address,
// never the key: each failure while the address has tries left, and once
// when it runs out of them.
func (t *authThrottle) failed(addr netip.Prefix, r *http.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b := t.addrs[addr]
	if b == nil {
		t.makeRoom(now)
		b = &authBucket{lim: rate.NewLimiter(authRefill, authBurst)}
		t.addrs[addr] = b
	}
	b.lim.AllowN(now, 1)
	if b.lim.TokensAt(now) >= 1 {
		t.log.Warn("authentication failed", "client", addr.String(), "method", r.Method, "path", r.URL.Path)
		return
	}
	if !b.throttled {
		b.throttled = true
		t.log.Warn("authentication failed too often: the client is throttled", "client", addr.String(),
			"tries", authBurst, "then_per_second", float64(authRefill))
	}
}

// makeRoom drops addresses while the map is full: those whose bucket is
// full again first (looked for at most once a second), then any one.
func (t *authThrottle) makeRoom(now time.Time) {
	if len(t.addrs) < authAddrs {
		return
	}
	if now.Sub(t.swept) >= time.Second { // at most once a second: a sweep reads every bucket
		t.swept = now
		for a, b := range t.addrs {
			if b.lim.TokensAt(now) >= authBurst {
				delete(t.addrs, a)
			}
		}
	}
	for a := range t.addrs {
		if len(t.addrs) < authAddrs {
			break
		}
		delete(t.addrs, a)
	}
}

// throttled is the 429 for an address that tried too many wrong keys.
func throttled(wait time.Duration) error {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	return &quotaError{
		apiError: errorf(http.StatusTooManyRequests, "too_many_failures",
			"too many requests from this address presented a wrong API key; try again in %d s", secs),
		retry: wait,
	}
}
