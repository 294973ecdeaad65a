package layout_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/internal/testenv"
	"github.com/xuri/excelize/v2"
)

// workbook builds an XLSX workbook from its parts: the sheet's XML body
// (what goes inside <worksheet>), and, when not empty, shared strings and
// styles. Parts are compressed at the best level, as a bomb would be.
func workbook(t testing.TB, sheet, sst, styles string) []byte {
	t.Helper()
	return zipOf(t, map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml": `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>` +
			`<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>`,
		"xl/worksheets/sheet1.xml": `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` + sheet + `</worksheet>`,
		"xl/sharedStrings.xml":     cond(sst != "", `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`+sst+`</sst>`),
		"xl/styles.xml":            cond(styles != "", `<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`+styles+`</styleSheet>`),
	})
}

func cond(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// zipOf zips files (empty ones left out), compressed at the best level.
func zipOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	z.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, level()) })
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml", "xl/sharedStrings.xml", "xl/styles.xml"} {
		body, ok := files[name]
		if !ok || body == "" {
			continue
		}
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// level is how hard test workbooks are compressed: as hard as a bomb
// would be when measuring, fast otherwise.
func level() int {
	if os.Getenv("LOOM_MEASURE") != "" {
		return flate.BestCompression
	}
	return flate.BestSpeed
}

// repeat is n copies of f(i), i from 1.
func repeat(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
	}
	return b.String()
}

// hostileXLSX are the hostile workbooks: each a generator, so a test
// builds only the ones it runs.
var hostileXLSX = []struct {
	name string
	make func(t testing.TB) []byte
}{
	// 200,000 rows with one cell at the last column, XFD1: padded to
	// 16,384 cells a row by excelize's GetRows (22 KB zipped).
	{"xfd-rows", func(t testing.TB) []byte {
		return workbook(t, "<sheetData>"+strings.Repeat(`<row><c r="XFD1"><v>1</v></c></row>`, 200_000)+"</sheetData>", "", "")
	}},
	// The same with each row numbered, its cell at XFD of its own row.
	{"xfd-rows-numbered", func(t testing.TB) []byte {
		return workbook(t, "<sheetData>"+repeat(200_000, func(i int) string { return fmt.Sprintf(`<row r="%d"><c r="XFD%d"><v>1</v></c></row>`, i, i) })+"</sheetData>", "", "")
	}},
	// 1,000,000 empty rows, then one cell at the last row.
	{"deep-empty", func(t testing.TB) []byte {
		return workbook(t, "<sheetData>"+strings.Repeat(`<row/>`, 1_000_000)+`<row r="1048576"><c r="A1048576"><v>1</v></c></row></sheetData>`, "", "")
	}},
	// 1,000,000 rows of one number each: 40 MB of XML.
	{"deep-1m", func(t testing.TB) []byte {
		return workbook(t, "<sheetData>"+repeat(1_000_000, func(i int) string { return fmt.Sprintf(`<row r="%d"><c r="A%d"><v>%d</v></c></row>`, i, i, i) })+"</sheetData>", "", "")
	}},
	// One row of 16,384 cells, then rows of 16,384 cells.
	{"wide", func(t testing.TB) []byte {
		row := func(r int) string {
			return fmt.Sprintf(`<row r="%d">`, r) + strings.Repeat(`<c><v>1</v></c>`, 16_384) + `</row>`
		}
		return workbook(t, "<sheetData>"+repeat(60, row)+"</sheetData>", "", "")
	}},
	// A table of shared strings of 900,000 entries (14 MB), two used.
	{"sst-bomb", func(t testing.TB) []byte {
		return workbook(t, `<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>899999</v></c></row></sheetData>`,
			strings.Repeat(`<si><t>a</t></si>`, 900_000), "")
	}},
	// 400,000 merged ranges each covering the whole capped sheet.
	{"merge-bomb", func(t testing.TB) []byte {
		return workbook(t, `<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row></sheetData><mergeCells>`+
			repeat(400_000, func(i int) string { return fmt.Sprintf(`<mergeCell ref="A%d:XFD1048576"/>`, i%1000+1) })+`</mergeCells>`, "", "")
	}},
	// A style sheet of 600,000 cell formats.
	{"styles-bomb", func(t testing.TB) []byte {
		return workbook(t, `<sheetData><row r="1"><c r="A1" s="599999" t="inlineStr"><is><t>x</t></is></c></row></sheetData>`, "",
			`<fonts count="1"><font><b/></font></fonts><cellXfs>`+strings.Repeat(`<xf fontId="0"/>`, 600_000)+`</cellXfs>`)
	}},
	// A sheet that unzips to 1 GiB of spaces (64 MiB but when measuring:
	// either is refused unread).
	{"zip-bomb", func(t testing.TB) []byte {
		var buf bytes.Buffer
		z := zip.NewWriter(&buf)
		for name, body := range map[string]string{"xl/workbook.xml": `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>`} {
			w, _ := z.Create(name)
			io.WriteString(w, body)
		}
		w, _ := z.Create("xl/worksheets/sheet1.xml")
		io.WriteString(w, `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
		spaces := bytes.Repeat([]byte(" "), 1<<20)
		n := 64
		if os.Getenv("LOOM_MEASURE") != "" {
			n = 1024
		}
		for range n {
			w.Write(spaces)
		}
		z.Close()
		return buf.Bytes()
	}},
	// Cells of the 60 MB sheet the issue found taking 52 s and 632 MB:
	// 1,500,000 cells of text in 1,000 columns.
	{"60mb", func(t testing.TB) []byte {
		return workbook(t, "<sheetData>"+repeat(1500, func(r int) string {
			return fmt.Sprintf(`<row r="%d">`, r) + strings.Repeat(`<c t="inlineStr"><is><t>abcdef</t></is></c>`, 1000) + `</row>`
		})+"</sheetData>", "", "")
	}},
}

// hostilePNG is a 16-bit RGBA PNG of w×h pixels, all white, written row
// by row so that the test never holds the picture: small on disk, 8 bytes
// a pixel once decoded.
func hostilePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&buf, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		io.WriteString(c, typ)
		c.Write(data)
		buf.WriteString(typ)
		buf.Write(data)
		binary.Write(&buf, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16 bits, RGBA
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := bytes.Repeat([]byte{0xff}, 1+8*w)
	row[0] = 0 // no filter
	for range h {
		z.Write(row)
	}
	z.Close()
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return buf.Bytes()
}

// TestMeasureHostile reads the hostile input LOOM_MEASURE names and
// prints how long it took and what it allocated: the figures for the
// issue. It is run by hand, one case a process, under a ulimit:
//
//	go test -c -o /tmp/layout.test ./apps/report/layout
//	LOOM_MEASURE=xfd-rows /usr/bin/time -v /tmp/layout.test -test.run TestMeasureHostile -test.v
func TestMeasureHostile(t *testing.T) {
	name := os.Getenv("LOOM_MEASURE")
	if name == "" {
		t.Skip("set LOOM_MEASURE to the name of a hostile input to measure it")
	}
	var data []byte
	for _, c := range hostileXLSX {
		if c.name == name {
			data = c.make(t)
		}
	}
	if name == "png16" {
		data = hostilePNG(t, 9_000, 4_400)
	}
	if data == nil {
		t.Fatalf("no hostile input %q", name)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	l, err := layout.Read(context.Background(), data, layout.Options{})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	cells := 0
	if l != nil {
		cells = len(l.Cells)
	}
	t.Logf("%s: %d bytes in, %d cells, err %v; %.2fs, %d MB allocated, %d MB from the OS", name, len(data), cells, err, took.Seconds(), (after.TotalAlloc-before.TotalAlloc)>>20, after.Sys>>20)
}

// Hostile workbooks are read within the caps, or refused as too large,
// without ever holding more than the caps: each allocates far less than
// the gigabytes it took when rows were padded to their last cell (the
// XFD rows ran out of memory; a million rows allocated 2.7 GB).
func TestHostileXLSX(t *testing.T) {
	refused := map[string]bool{"deep-1m": true, "zip-bomb": true, "60mb": true}
	for _, c := range hostileXLSX {
		t.Run(c.name, func(t *testing.T) {
			data := c.make(t)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			l, err := layout.FromXLSX(context.Background(), data, layout.Options{})
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<30 {
				t.Errorf("reading it allocated %d MB", alloc>>20)
			}
			if refused[c.name] {
				if !errors.Is(err, layout.ErrWorkbookTooLarge) {
					t.Fatalf("got %v, want ErrWorkbookTooLarge", err)
				}
				if !strings.Contains(err.Error(), "16 MiB") {
					t.Errorf("the error does not say the limit: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Cells) > layout.MaxSheetRows*layout.MaxSheetCols || len(l.Columns) > layout.MaxSheetCols {
				t.Errorf("%d cells in %d columns", len(l.Cells), len(l.Columns))
			}
			for _, cell := range l.Cells {
				col, row, err := excelize.CellNameToCoordinates(strings.Split(cell.Ref, ":")[0])
				if err != nil || col > layout.MaxSheetCols || row > layout.MaxSheetRows {
					t.Fatalf("cell %s is past the caps", cell.Ref)
				}
			}
		})
	}
}

// Cutting a workbook keeps what it holds within the caps: shared strings
// renumbered, merged ranges, bold cells, column widths.
func TestXLSXTrimKeeps(t *testing.T) {
	data := workbook(t,
		`<sheetFormatPr defaultRowHeight="15"/><cols><col min="1" max="1" width="30" customWidth="1"/></cols><sheetData>`+
			`<row r="1"><c r="A1" t="s" s="1"><v>3</v></c><c r="B1" t="s"><v>1</v></c></row>`+
			`<row r="2" ht="30" customHeight="1"><c r="A2" t="s"><v> 3 </v></c><c r="XFD2" t="s"><v>0</v></c></row>`+
			`<row r="5000"><c r="A5000"><v>9</v></c></row></sheetData>`+
			`<mergeCells count="1"><mergeCell ref="B1:C1"/></mergeCells><pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>`,
		`<si><t>zero</t></si><si><t>one</t></si><si><t>two</t></si><si><t>three</t></si>`,
		`<fonts count="2"><font><sz val="11"/></font><font><b/><sz val="11"/></font></fonts><cellXfs count="2"><xf fontId="0"/><xf fontId="1" applyFont="1"/></cellXfs>`)
	l, err := layout.FromXLSX(context.Background(), data, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range l.Cells {
		got = append(got, fmt.Sprintf("%s=%s bold=%v w=%d h=%d", c.Ref, c.Text, c.Bold, c.Box.W, c.Box.H))
	}
	want := []string{"A1=three bold=true w=210 h=20", "B1:C1=one bold=false w=128 h=20", "A2=three bold=false w=210 h=40"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("cells\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Pictures are refused on what they would take decoded, before they are
// decoded; a picture whose size cannot be read is never decoded.
func TestCheckPicture(t *testing.T) {
	grey := func(w, h int) []byte {
		var buf bytes.Buffer
		png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h)))
		return buf.Bytes()
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"small grey", grey(100, 100), nil},
		// 39.6 million pixels, under MaxPixels, but 317 MB decoded.
		{"16-bit RGBA", pngHeader(9_000, 4_400, 16, 6, 0), layout.ErrTooLarge},
		{"16-bit RGBA, A4 at 300 dpi", pngHeader(2_480, 3_508, 16, 6, 0), nil},
		{"8-bit RGBA, interlaced", pngHeader(6_000, 6_000, 8, 6, 1), layout.ErrTooLarge},
		{"8-bit RGBA", pngHeader(6_000, 6_000, 8, 6, 0), nil},
		{"too many pixels", pngHeader(100_000, 100_000, 1, 0, 0), layout.ErrTooLarge},
		{"a PNG that is a zip", append([]byte("\x89PNG\r\n\x1a\n"), zipOf(t, map[string]string{"xl/workbook.xml": "<workbook/>"})...), layout.ErrBadPicture},
		{"a truncated header", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), layout.ErrBadPicture},
	} {
		err := layout.CheckPicture(c.data)
		if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// FromImage refuses them before OCR, whatever is installed.
	for _, data := range [][]byte{pngHeader(9_000, 4_400, 16, 6, 0), []byte("\x89PNG\r\n\x1a\nPK\x03\x04")} {
		if _, err := layout.FromImage(context.Background(), data, layout.Options{}); !errors.Is(err, layout.ErrTooLarge) && !errors.Is(err, layout.ErrBadPicture) {
			t.Errorf("FromImage: got %v, want a refusal", err)
		}
	}
}

// pngHeader is the start of a PNG of w×h pixels of the given bit depth,
// colour type and interlace method: all DecodeConfig reads.
func pngHeader(w, h int, depth, colour, interlace byte) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9], ihdr[12] = depth, colour, interlace
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&buf, binary.BigEndian, uint32(13))
	buf.WriteString("IHDR")
	buf.Write(ihdr)
	binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("IHDR"), ihdr...)))
	return buf.Bytes()
}

// needProgram skips a test when program is missing, except under CI.
func needProgram(t *testing.T, program, pkg string) {
	t.Helper()
	testenv.NeedProgram(t, program, "Debian "+pkg)
}

// minimalPDF is a one-page PDF whose page is w×h points, with nothing
// drawn on it.
func minimalPDF(w, h int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	var offs []int
	for _, obj := range []string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		fmt.Sprintf("<</Type/Page/Parent 2 0 R/MediaBox[0 0 %d %d]>>", w, h),
	} {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj%s endobj\n", len(offs), obj)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

// A PDF page is measured before it is drawn: a huge page is refused, a
// page the PDF lacks or a PDF that is not one gives a clear error with
// nothing pdftoppm or pdfinfo printed.
func TestPDFPageHostile(t *testing.T) {
	needProgram(t, "pdftoppm", "poppler-utils")
	needProgram(t, "prlimit", "util-linux")
	ctx := context.Background()
	png, err := layout.PDFPage(ctx, minimalPDF(595, 842), 1)
	if err != nil {
		t.Fatalf("an A4 page: %v", err)
	}
	if c, _, err := image.DecodeConfig(bytes.NewReader(png)); err != nil || c.Width != 1240 || c.Height != 1755 {
		t.Errorf("an A4 page drawn %dx%d (%v), want 1240x1755", c.Width, c.Height, err)
	}
	for _, c := range []struct {
		name string
		pdf  []byte
		page int
		want string
	}{
		{"200000 points a side", minimalPDF(200_000, 200_000), 1, "larger than A0"},
		{"a page it lacks", minimalPDF(595, 842), 7, "no page 7"},
		{"no pages", []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 9 0 R>>endobj\ntrailer<</Root 1 0 R>>\n"), 1, "no page 1"},
		{"malformed", []byte("%PDF-1.4\n%garbage\x00\xff"), 1, "could not be read"},
		{"a PDF that is a zip", append([]byte("%PDF-1.4\n"), zipOf(t, map[string]string{"xl/workbook.xml": "<workbook/>"})...), 1, "could not be read"},
	} {
		_, err := layout.PDFPage(ctx, c.pdf, c.page)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
			continue
		}
		for _, leak := range []string{"Syntax", "Error:", "xref", "stderr", "exit status", "/tmp"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: the error %q shows the program's output (%q)", c.name, err, leak)
			}
		}
	}
}
