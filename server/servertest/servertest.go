// Package servertest runs Loom's server for tests of code built on it.
package servertest

import (
	"context"
	"net"
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
