// Package panel is the scheduler's view on Loom's web page: the week as a timetable. The server serves Files
// under /ui/panels/schedule/ (server.Agent.Panel); the page imports panel.js.
package panel

import "embed"

// Files are panel.js, the ES module the page imports, and panel.css.
//
//go:embed panel.js panel.css
var Files embed.FS
