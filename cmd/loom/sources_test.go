package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/datasource/shop"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// TestServeWithSourcesDown builds every agent as loom serve does, with a
// sources file whose PostgreSQL and MySQL sources are down: the server
// starts with all its agents, /readyz says the two agents on the sources
// are not ready and why (no host or password), a question on a down
// source says it is unavailable, and one on the shop is answered. A
// sources file that names the server's own database stops it with a
// message saying so.
func TestServeWithSourcesDown(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shopFile := filepath.Join(dir, "shop.db")
	if _, err := shop.Ensure(ctx, shopFile); err != nil {
		t.Fatal(err)
	}
	addr := datasourcetest.ClosedAddr(t)
	const secret = "pa55-w0rd-x"
	sources := filepath.Join(dir, "sources.yaml")
	if err := os.WriteFile(sources, []byte("- name: shop\n  url: "+shopFile+
		"\n- name: sales\n  url: postgres://reader:"+secret+"@"+addr+"/sales?sslmode=disable"+
		"\n- name: crm\n  url: mysql://reader:"+secret+"@"+addr+"/crm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := agentsFor(config{sqlSources: sources})
	db := filepath.Join(dir, "loom.db")
	srv, err := server.New(ctx, server.Options{Agents: reg, Database: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("the server did not start with two sources down: %v", err)
	}
	defer srv.Close()
	base := servertest.Serve(t, srv)

	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ready struct {
		Agents map[string]string `json:"agents"`
	}
	if err := json.Unmarshal(body, &ready); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}
	for _, name := range reg.Names() {
		got := ready.Agents[name]
		switch name {
		case "sqlagent", "dataagent":
			if !strings.Contains(got, "source sales is unavailable: connection refused") || !strings.Contains(got, "source crm is unavailable") {
				t.Errorf("/readyz says %s is %q", name, got)
			}
		default:
			if got != "ready" {
				t.Errorf("/readyz says %s is %q", name, got)
			}
		}
	}
	if strings.Contains(string(body), addr) || strings.Contains(string(body), secret) {
		t.Errorf("/readyz shows the address or the password: %s", body)
	}

	ask := func(source, question string) sqlagent.State {
		t.Helper()
		resp, err := http.Post(base+"/threads/t-"+source+"/runs/wait", "application/json", strings.NewReader(
			`{"assistant_id":"sqlagent","if_not_exists":"create","input":{"source":"`+source+`","question":"`+question+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st sqlagent.State
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || json.Unmarshal(b, &st) != nil || st.Answer == nil {
			t.Fatalf("ask %s: %d %s", source, resp.StatusCode, b)
		}
		return st
	}
	if st := ask("crm", "SELECT 1"); !strings.Contains(st.Answer.Text, "Source crm is unavailable: connection refused") {
		t.Errorf("crm: %q", st.Answer.Text)
	}
	if st := ask("shop", "SELECT count(*) FROM products"); len(st.Answer.Rows) != 1 {
		t.Errorf("shop: %+v", st.Answer)
	}

	// The server's own database as a source.
	own := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(own, []byte("- name: mine\n  url: sqlite://"+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv2, err := server.New(ctx, server.Options{Agents: agentsFor(config{sqlSources: own}), Database: db, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		srv2.Close()
		t.Fatal("the server started with its own database as a source")
	}
	if !strings.Contains(err.Error(), "data source mine is Loom's own database") {
		t.Errorf("error = %v", err)
	}
}
