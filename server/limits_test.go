package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/server"
)

// cutBound bounds how long a test waits for the server to do what it must;
// hitting it fails the test (it is never what passes it).
const cutBound = time.Minute

// dialRaw opens a raw TCP connection to the server of url.
func dialRaw(t *testing.T, url string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(cutBound))
	return c
}

// closedByServer reads c to its end and reports what the server sent:
// it fails the test unless the server closed the connection.
func closedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server kept the connection open for %v (got %q)", cutBound, b)
		}
		if !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("read: %v", err)
		}
	}
	return string(b)
}

// A client that trickles a body is cut off at the read timeout, with 408
// when the handler was reading it; many at once do not keep the server
// from answering others.
func TestSlowBodyIsCut(t *testing.T) {
	ts := startServer(t, server.Options{ReadTimeout: 300 * time.Millisecond})
	const slow = 20
	var wg sync.WaitGroup
	got := make([]string, slow)
	for i := range slow {
		wg.Go(func() {
			c := dialRaw(t, ts.URL)
			fmt.Fprintf(c, "POST /threads HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", strings.TrimPrefix(ts.URL, "http://"))
			stop := make(chan struct{})
			go func() { // a byte every 20 ms: 1 MB would take 5 hours
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
			got[i] = closedByServer(t, c)
			close(stop)
		})
	}
	// Others are served meanwhile.
	if st, b := call(t, "GET", ts.URL+"/healthz", "", nil); st != 200 {
		t.Errorf("healthz while bodies trickle: %d %s", st, b)
	}
	wg.Wait()
	for i, resp := range got {
		if resp != "" && !strings.HasPrefix(resp, "HTTP/1.1 408 ") {
			t.Errorf("slow client %d got %q, want 408 or nothing", i, resp)
		}
	}
	if st, b := call(t, "POST", ts.URL+"/threads", "", map[string]any{}); st != 200 {
		t.Errorf("a thread after the slow clients: %d %s", st, b)
	}
	if n := countRows(t, ts.Path, "").threads; n != 1 {
		t.Errorf("%d threads, want the one made after the slow clients", n)
	}
}

// An idle keep-alive connection is closed after the idle timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	ts := startServer(t, server.Options{IdleTimeout: 200 * time.Millisecond})
	c := dialRaw(t, ts.URL)
	br := bufio.NewReader(c)
	for i := range 2 { // served twice on one connection, then left idle
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(ts.URL, "http://"))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("request %d: %d, close %v: want 200 on a kept-alive connection", i, resp.StatusCode, resp.Close)
		}
	}
	_, err := br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the idle connection was open after %v", cutBound)
	}
	if err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
}

// A header larger than MaxHeaderBytes gets 431.
func TestLargeHeaderIsRefused(t *testing.T) {
	ts := startServer(t, server.Options{MaxHeaderBytes: 4 << 10})
	st, _ := call(t, "GET", ts.URL+"/healthz", "", nil, "X-Big", strings.Repeat("x", 64<<10))
	if st != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB header: %d, want 431", st)
	}
	if st, _ := call(t, "GET", ts.URL+"/healthz", "", nil, "X-Small", "x"); st != 200 {
		t.Errorf("small header: %d", st)
	}
}

// Streams, waits and chats that last longer than the write timeout are
// not cut: each write gets the timeout anew.
func TestLongResponsesOutlastWriteTimeout(t *testing.T) {
	const write = 200 * time.Millisecond
	ts := startServer(t, server.Options{WriteTimeout: write, Heartbeat: 50 * time.Millisecond})
	// 5 steps of 150 ms: each run lasts 750 ms at least, past the timeout.
	input := map[string]any{"steps": 5, "ms": 150}

	t.Run("stream", func(t *testing.T) {
		tid := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/stream", "", map[string]any{"assistant_id": "slow", "input": input, "stream_mode": "values"})
		if st != 200 || !strings.Contains(string(b), `"done":5`) {
			t.Errorf("stream: %d, want every step to the last:\n%s", st, b)
		}
	})
	t.Run("wait", func(t *testing.T) {
		tid := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "slow", "input": input})
		if st != 200 || mustJSON(t, b)["done"] != float64(5) {
			t.Errorf("wait: %d %s", st, b)
		}
	})
	t.Run("join", func(t *testing.T) {
		tid := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs", "", map[string]any{"assistant_id": "slow", "input": input})
		if st != 200 {
			t.Fatalf("run: %d %s", st, b)
		}
		st, b = call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+mustJSON(t, b)["run_id"].(string)+"/join", "", nil)
		if st != 200 || mustJSON(t, b)["done"] != float64(5) {
			t.Errorf("join: %d %s", st, b)
		}
	})
}
