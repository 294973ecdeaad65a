package report

import (
	"log/slog"
	"os"
	"sync"
	"unicode"

	"github.com/go-analyze/charts"
)

// cjkFonts are TrueType fonts with Chinese glyphs that Debian installs
// (fonts-arphic-gbsn00lp, fonts-arphic-gkai00mp), looked for in order
// when Options.MeasureFont is empty.
var cjkFonts = []string{
	"/usr/share/fonts/truetype/arphic-gbsn00lp/gbsn00lp.ttf",
	"/usr/share/fonts/truetype/arphic-gkai00mp/gkai00mp.ttf",
}

var (
	fontsMu sync.Mutex
	fonts   = map[string]string{} // path → installed family, "" when it could not be read
)

// measureFamily is the chart library's family name for the font that
// measures a chart's text, or "" to keep the library's default. The
// default (Roboto) has no Chinese glyphs and measures them at about half
// their width, so titles, legends and axis labels would be laid out on
// top of each other; the browser draws the text with its own fonts (the
// page's CSS names them), so only the widths matter here.
func measureFamily(path string) string {
	paths := cjkFonts
	if path != "" {
		paths = []string{path}
	}
	fontsMu.Lock()
	defer fontsMu.Unlock()
	for _, p := range paths {
		family, seen := fonts[p]
		if !seen {
			family = installFont(p)
			fonts[p] = family
		}
		if family != "" {
			return family
		}
	}
	return ""
}

func installFont(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) {
			slog.Warn("report: reading a font to measure chart text", "path", path, "err", err)
		}
		return ""
	}
	family := "report-measure:" + path
	if err := charts.InstallFont(family, data); err != nil {
		slog.Warn("report: installing a font to measure chart text", "path", path, "err", err)
		return ""
	}
	return family
}

// hasWide reports whether s has a character the default font lacks and
// draws wide: Han, kana, hangul or a full-width form.
func hasWide(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
			(r >= 0xFF00 && r <= 0xFFEF) || (r >= 0x3000 && r <= 0x303F) {
			return true
		}
	}
	return false
}
