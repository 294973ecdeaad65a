package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A web page on another site cannot drive the cabin's endpoints of a
// keyless `loom serve`: a text/plain post (which a browser sends to any
// site without asking) gets 415, a JSON post from another origin 403, a
// request through another DNS name 421, and the car's windows stay shut;
// the same request from the server's own origin opens them. A name given
// with LOOM_ALLOWED_HOSTS is served.
func TestServeRefusesOtherSites(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("LOOM_DATABASE_URL", "")
	t.Setenv("LOOM_ALLOWED_HOSTS", "loom.test")
	line, stop := startServe(t)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := strings.TrimSuffix(strings.Fields(line)[3], "/")
	port := url[strings.LastIndex(url, ":"):]
	open := `{"session_id":"s1","text":"打开车窗"}`
	send := func(ctype, host string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/api/v1/agent/chat", strings.NewReader(open))
		req.Header.Set("Content-Type", ctype)
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	windows := func() map[string]int {
		t.Helper()
		resp, err := http.Get(url + "/api/v1/cabin/vehicles/car-1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Windows map[string]int `json:"windows"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("vehicle: %d %v", resp.StatusCode, err)
		}
		return v.Windows
	}
	shut := func() bool {
		for _, p := range windows() {
			if p != 0 {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		name        string
		ctype, host string
		header      []string
		status      int
	}{
		{"text/plain", "text/plain", "", nil, 415},
		{"form", "application/x-www-form-urlencoded", "", nil, 415},
		{"other origin", "application/json", "", []string{"Origin", "https://evil.example"}, 403},
		{"cross-site", "application/json", "", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"other name", "application/json", "rebound.example" + port, nil, 421},
	} {
		if st := send(c.ctype, c.host, c.header...); st != c.status {
			t.Errorf("%s: %d, want %d", c.name, st, c.status)
		}
		if !shut() {
			t.Fatalf("%s opened the windows: %v", c.name, windows())
		}
	}
	if st := send("application/json", "loom.test"+port, "Origin", "http://loom.test"+port, "Sec-Fetch-Site", "same-origin"); st != 200 || shut() {
		t.Errorf("from the server's own origin: %d, windows %v", st, windows())
	}
}

// The quota flags reach the server, from the environment too: with one
// thread allowed and the quotas applied to keyless use, a second thread
// is refused with 429 and Retry-After; a malformed value is an error.
func TestServeQuotaFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("LOOM_DATABASE_URL", "")
	t.Setenv("LOOM_MAX_THREADS", "1")
	t.Setenv("LOOM_QUOTA_KEYLESS", "true")
	line, stop := startServe(t)
	url := strings.Fields(line)[3]
	var got []string
	for range 2 {
		resp, err := http.Post(url+"threads", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status+" "+resp.Header.Get("Retry-After"))
	}
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
	if got[0] != "200 OK " || !strings.HasPrefix(got[1], "429 Too Many Requests ") || strings.HasSuffix(got[1], " ") {
		t.Errorf("two threads: %q, want 200, then 429 with Retry-After", got)
	}

	t.Setenv("LOOM_MAX_THREADS", "many")
	if err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, io.Discard); err == nil || !strings.Contains(err.Error(), "$LOOM_MAX_THREADS") {
		t.Errorf("malformed LOOM_MAX_THREADS: %v", err)
	}
}
