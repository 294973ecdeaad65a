// Package servertest runs Loom's server for tests of code built on it.
package servertest

import (
	"context"
	"fmt"
	"io"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
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
