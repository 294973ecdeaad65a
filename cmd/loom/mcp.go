package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/tool/mcptool"
)

// mcpAgents are the agents that take the tools of MCP servers.
var mcpAgents = []string{"sqlagent"}

// openMCP connects to the MCP servers listed in the file at path and
// gives each agent that takes MCP tools those of its servers. Close the
// toolset when the server stops.
func openMCP(ctx context.Context, path string, cfg *config) (*mcptool.Toolset, error) {
	c, err := mcptool.Load(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	for _, s := range c.Servers {
		for _, a := range s.Agents {
			if !slices.Contains(mcpAgents, a) {
				return nil, fmt.Errorf("serve: MCP server %s: agent %q takes no MCP tools (those that do: %s)", s.Name, a, strings.Join(mcpAgents, ", "))
			}
		}
	}
	ts, err := mcptool.Open(ctx, c.For("sqlagent")...)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	cfg.sqlTools = ts.Tools()
	return ts, nil
}
