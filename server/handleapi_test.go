package server_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// TestHandleAPI: a handler mounted with HandleAPI is behind the keys,
// learns its caller, and can stream through the server's response writer
// as an http.Flusher.
func TestHandleAPI(t *testing.T) {
	srv, err := server.New(context.Background(), server.Options{Agents: testAgents(t), Database: filepath.Join(t.TempDir(), "loom.db"),
		Keys: []string{"key-a"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	srv.HandleAPI("/x/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "not a Flusher", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "caller %s\n", server.Caller(r.Context()))
		f.Flush()
		select { // the client reads the first line before the handler ends
		case <-read:
		case <-time.After(5 * time.Second):
		}
		fmt.Fprintln(w, "done")
	}))
	url := servertest.Serve(t, srv) + "/x/"

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: HTTP %d", resp.StatusCode)
	}

	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer key-a")
	start := time.Now()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "caller key:") || time.Since(start) > 30*time.Second { // a bound for a hang, not a speed
		t.Fatalf("first line %q (%v) after %v: want the caller, flushed at once", first, err, time.Since(start))
	}
	close(read)
	if rest, _ := br.ReadString('\n'); rest != "done\n" {
		t.Errorf("then %q", rest)
	}
}
