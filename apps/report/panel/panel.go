// Package panel is the report designer's view on Loom's web page: the thread's preview and versions, and uploads from the chat. The server serves Files
// under /ui/panels/report/ (server.Agent.Panel); the page imports panel.js.
package panel

import "embed"

// Files are panel.js, the ES module the page imports, and panel.css.
//
//go:embed panel.js panel.css
var Files embed.FS
