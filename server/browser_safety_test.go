package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/server"
)

// browserServer serves the test agents with opts and, beside them, an
// endpoint mounted with HandleAPI that counts the calls reaching it.
func browserServer(t *testing.T, opts server.Options) (*testServer, *atomic.Int32) {
	t.Helper()
	ts := startServer(t, opts)
	var reached atomic.Int32
	ts.srv.HandleAPI("POST /api/v1/agent/open", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}\n"))
	}))
	return ts, &reached
}

// browserRequest is a request as a browser (or anything else) may send it.
type browserRequest struct {
	method, path, ctype, body string
	header                    []string // name, value, …; "Host" sets the Host
}

// send makes r and returns the status and the error code ("" for none).
func (r browserRequest) send(t *testing.T, base string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		if r.header[i] == "Host" {
			req.Host = r.header[i+1]
		} else {
			req.Header.Set(r.header[i], r.header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error.Code
}

// Without keys only loopback Host names are served, bodies must be JSON
// and a page on another origin cannot change anything: the server's own
// endpoints and one mounted with HandleAPI alike, with nothing written
// and the mounted handler never reached when refused.
func TestBrowserSafety(t *testing.T) {
	ts, reached := browserServer(t, server.Options{})
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	const thread = `{"metadata":{"by":"page"}}`
	for _, c := range []struct {
		name string
		browserRequest
		status int
		code   string
	}{
		{"foreign host", browserRequest{"GET", "/assistants/demo", "", "", []string{"Host", "rebound.example" + port}}, 421, "host_not_allowed"},
		{"foreign host, health", browserRequest{"GET", "/healthz", "", "", []string{"Host", "rebound.example"}}, 421, "host_not_allowed"},
		{"foreign host, page", browserRequest{"GET", "/", "", "", []string{"Host", "rebound.example" + port}}, 421, "host_not_allowed"},
		{"foreign host, mounted", browserRequest{"POST", "/api/v1/agent/open", "application/json", "{}", []string{"Host", "rebound.example" + port}}, 421, "host_not_allowed"},
		{"localhost", browserRequest{"GET", "/assistants/demo", "", "", []string{"Host", "localhost" + port}}, 200, ""},
		{"::1", browserRequest{"GET", "/assistants/demo", "", "", []string{"Host", "[::1]" + port}}, 200, ""},
		{"text/plain", browserRequest{"POST", "/threads", "text/plain", thread, nil}, 415, "unsupported_media_type"},
		{"text/plain, mounted", browserRequest{"POST", "/api/v1/agent/open", "text/plain", `{"text":"打开车窗"}`, nil}, 415, "unsupported_media_type"},
		{"form, mounted", browserRequest{"POST", "/api/v1/agent/open", "application/x-www-form-urlencoded", "text=open", nil}, 415, "unsupported_media_type"},
		{"no type, mounted", browserRequest{"POST", "/api/v1/agent/open", "", "{}", nil}, 415, "unsupported_media_type"},
		{"foreign origin", browserRequest{"POST", "/threads", "application/json", thread, []string{"Origin", "http://evil.example"}}, 403, "cross_origin"},
		{"foreign origin, mounted", browserRequest{"POST", "/api/v1/agent/open", "application/json", "{}", []string{"Origin", "http://evil.example"}}, 403, "cross_origin"},
		{"null origin, mounted", browserRequest{"POST", "/api/v1/agent/open", "application/json", "{}", []string{"Origin", "null"}}, 403, "cross_origin"},
		{"cross-site fetch, mounted", browserRequest{"POST", "/api/v1/agent/open", "", "", []string{"Sec-Fetch-Site", "cross-site"}}, 403, "cross_origin"},
		{"same-site other port", browserRequest{"POST", "/threads", "application/json", thread, []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}}, 403, "cross_origin"},
		{"foreign origin, delete", browserRequest{"DELETE", "/threads/x", "", "", []string{"Origin", "http://evil.example"}}, 403, "cross_origin"},
		{"foreign origin, read", browserRequest{"GET", "/assistants/demo", "", "", []string{"Origin", "http://evil.example"}}, 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, calls := countRows(t, ts.Path, ""), reached.Load()
			st, code := c.send(t, ts.URL)
			if st != c.status || code != c.code {
				t.Errorf("%d %q, want %d %q", st, code, c.status, c.code)
			}
			if after := countRows(t, ts.Path, ""); after != before {
				t.Errorf("wrote: %+v before, %+v after", before, after)
			}
			if n := reached.Load() - calls; c.status != 200 && n != 0 {
				t.Errorf("the mounted handler ran %d times", n)
			}
		})
	}

	// The page's own requests: same origin, JSON.
	self := []string{"Origin", ts.URL, "Sec-Fetch-Site", "same-origin"}
	if st, code := (browserRequest{"POST", "/threads", "application/json", thread, self}).send(t, ts.URL); st != 200 {
		t.Errorf("same-origin thread: %d %s", st, code)
	}
	if st, code := (browserRequest{"POST", "/api/v1/agent/open", "application/json; charset=utf-8", "{}", self}).send(t, ts.URL); st != 200 || reached.Load() != 1 {
		t.Errorf("same-origin mounted call: %d %s, reached %d times", st, code, reached.Load())
	}
	if st, code := (browserRequest{"POST", "/api/v1/agent/open", "", "", nil}).send(t, ts.URL); st != 200 {
		t.Errorf("empty body without a type: %d %s", st, code)
	}
}

// AllowedHosts adds names to the loopback ones; with keys every Host is
// served unless AllowedHosts lists some.
func TestAllowedHosts(t *testing.T) {
	get := func(ts *testServer, host, key string) int {
		st, _ := browserRequest{"GET", "/assistants/demo", "", "", []string{"Host", host, "Authorization", "Bearer " + key}}.send(t, ts.URL)
		return st
	}
	listed := startServer(t, server.Options{AllowedHosts: []string{"loom.test", "*.example.org"}})
	for host, want := range map[string]int{"loom.test": 200, "LOOM.test:8080": 200, "a.example.org": 200, "example.org": 421, "loom.test.evil": 421, "127.0.0.1": 200} {
		if st := get(listed, host, ""); st != want {
			t.Errorf("allowed hosts, Host %s: %d, want %d", host, st, want)
		}
	}
	keyed := startServer(t, server.Options{Keys: []string{"key-a"}})
	if st := get(keyed, "loom.example.com", "key-a"); st != 200 {
		t.Errorf("with keys, any Host: %d", st)
	}
	both := startServer(t, server.Options{Keys: []string{"key-a"}, AllowedHosts: []string{"loom.example.com"}})
	for host, want := range map[string]int{"loom.example.com": 200, "other.example.com": 421, "localhost": 200} {
		if st := get(both, host, "key-a"); st != want {
			t.Errorf("keys and allowed hosts, Host %s: %d, want %d", host, st, want)
		}
	}
}
