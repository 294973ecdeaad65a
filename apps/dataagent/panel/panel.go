// Package panel is the data analyst's view on Loom's web page: its knowledge and data sources, and its HTML report inline in the chat. The server serves Files
// under /ui/panels/dataagent/ (server.Agent.Panel); the page imports panel.js.
package panel

import "embed"

// Files are panel.js, the ES module the page imports, and panel.css.
//
//go:embed panel.js panel.css
var Files embed.FS
