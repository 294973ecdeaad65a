package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenMCP(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, doc, want string }{
		{"agent without MCP tools", "servers: [{name: files, command: mcp-files, agents: [cabin]}]", `agent "cabin" takes no MCP tools`},
		{"malformed", "servers: [{name: files, comand: x}]", "comand"},
		{"program missing", "servers: [{name: files, command: " + filepath.Join(dir, "no-such-program") + "}]", "MCP server files"},
	} {
		path := filepath.Join(dir, "mcp.yaml")
		if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		var cfg config
		ts, err := openMCP(t.Context(), path, &cfg)
		if err == nil {
			ts.Close()
			t.Errorf("%s: no error", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if _, err := openMCP(t.Context(), filepath.Join(dir, "missing.yaml"), &config{}); err == nil {
		t.Error("a missing file: no error")
	}
}
