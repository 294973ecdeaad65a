// Package servertest runs Loom's server for tests of code built on it.
package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/loomkit/loom/server"
)

// Serve serves srv on a loopback port until the test ends, then shuts it
// down gracefully and closes it, reporting an error from either; it
// returns the base URL, such as http://127.0.0.1:40123.
func Serve(t testing.TB, srv *server.Server) string {
	t.Helper()
	base, _ := serve(t, srv)
	return base
}

// serve is Serve, also returning a function that stops the server before
// the test ends (calling it again does nothing).
func serve(t testing.TB, srv *server.Server) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			if err := srv.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}

// Loom is Loom's server with agents on a loopback port, and a client for
// an end-to-end test to call it with.
type Loom struct {
	// T is the test; Base the server's base URL.
	T    testing.TB
	Base string
	stop func()
}

// Start serves agents on the database db (a SQLite file or a Postgres
// URL) behind the API keys, quietly, until Stop or the end of the test.
func Start(t testing.TB, db string, keys []string, agents ...server.Agent) *Loom {
	t.Helper()
	var reg server.Registry
	for _, a := range agents {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: db, Keys: keys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	base, stop := serve(t, srv)
	return &Loom{T: t, Base: base, stop: stop}
}

// Stop shuts the server down gracefully, as a restart in a test needs.
func (l *Loom) Stop() { l.stop() }

// Send sends a request with the API key and a body of contentType
// ("" for none) and returns the status and the response body.
func (l *Loom) Send(key, method, path, contentType string, body io.Reader) (int, []byte) {
	l.T.Helper()
	req, err := http.NewRequest(method, l.Base+path, body)
	if err != nil {
		l.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		l.T.Fatal(err)
	}
	return resp.StatusCode, b
}

// Do sends body (nil for none) as JSON with the API key and returns the
// status and the response body.
func (l *Loom) Do(key, method, path string, body any) (int, []byte) {
	l.T.Helper()
	if body == nil {
		return l.Send(key, method, path, "", nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		l.T.Fatal(err)
	}
	return l.Send(key, method, path, "application/json", bytes.NewReader(b))
}

// Chat sends text on thread to the chat completions API of model (an
// agent's name) and returns the assistant's reply.
func (l *Loom) Chat(key, model, thread, text string) string {
	l.T.Helper()
	code, b := l.Do(key, "POST", "/v1/chat/completions", map[string]any{
		"model": model, "thread_id": thread,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	if code != http.StatusOK {
		l.T.Fatalf("chat %q: %d %s", text, code, b)
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Choices) == 0 {
		l.T.Fatalf("chat: %v %s", err, b)
	}
	return resp.Choices[0].Message.Content
}

// State returns the values of thread's state as key sees them.
func State[S any](l *Loom, key, thread string) S {
	l.T.Helper()
	code, b := l.Do(key, "GET", "/threads/"+thread+"/state", nil)
	if code != http.StatusOK {
		l.T.Fatalf("state of %s: %d %s", thread, code, b)
	}
	var st struct {
		Values S `json:"values"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		l.T.Fatalf("state of %s: %v", thread, err)
	}
	return st.Values
}

// AtOnce sends n requests at the same time, request(i) making the i-th,
// and fails the test for each that gets no answer or one other than 200
// OK, with the answer's body.
func AtOnce(t testing.TB, n int, request func(i int) *http.Request) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := request(i)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("%s %s: HTTP %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
