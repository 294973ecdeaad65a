package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
)

// mainNS is SpreadsheetML's namespace.
const mainNS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"

// part writes one part of a workbook to w.
type part func(w io.Writer) error

// text is a part whose content is s.
func text(s string) part {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// repeated is a part: head, n times unit, tail, written a chunk at a time
// so that a part of hundreds of MB is never in memory.
func repeated(head, unit string, n int, tail string) part {
	return func(w io.Writer) error {
		if _, err := io.WriteString(w, head); err != nil {
			return err
		}
		per := max(1, (1<<20)/len(unit))
		chunk := strings.Repeat(unit, per)
		for n > 0 {
			k := min(n, per)
			if _, err := io.WriteString(w, chunk[:k*len(unit)]); err != nil {
				return err
			}
			n -= k
		}
		_, err := io.WriteString(w, tail)
		return err
	}
}

// workbook zips a one-sheet workbook: its sheet, its shared strings (none
// when ""), and other parts by name (which replace the usual ones).
func workbook(sheet, shared part, extra map[string]part) ([]byte, error) {
	parts := map[string]part{
		"[Content_Types].xml": text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`),
		"_rels/.rels": text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`),
		"xl/workbook.xml": text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="` + mainNS + `" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`),
		"xl/_rels/workbook.xml.rels": text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`),
		"xl/worksheets/sheet1.xml": sheet,
	}
	if shared != nil {
		parts["xl/sharedStrings.xml"] = shared
	}
	for name, p := range extra {
		parts[name] = p
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	z.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	// In a fixed order, so that every run makes the same bytes.
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/sharedStrings.xml", "xl/worksheets/sheet1.xml"} {
		p, ok := parts[name]
		if !ok {
			continue
		}
		w, err := z.Create(name)
		if err != nil {
			return nil, err
		}
		if err := p(w); err != nil {
			return nil, fmt.Errorf("hostile: workbook part %s: %w", name, err)
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sheetHead and sheetTail wrap a sheet's rows.
const (
	sheetHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" + `<worksheet xmlns="` + mainNS + `"><sheetData>`
	sheetTail = `</sheetData></worksheet>`
)

// controlSheet is a small form: labels and values on four rows.
const controlSheet = sheetHead +
	`<row r="1"><c r="A1" t="inlineStr"><is><t>客户 Customer</t></is></c><c r="B1" t="inlineStr"><is><t>金额 Amount</t></is></c></row>` +
	`<row r="2"><c r="A2" t="inlineStr"><is><t>Acme</t></is></c><c r="B2"><v>12.5</v></c></row>` +
	`<row r="3"><c r="A3" t="inlineStr"><is><t>Globex</t></is></c><c r="B3"><v>7</v></c></row>` +
	`<row r="4"><c r="A4" t="inlineStr"><is><t>合计 Total</t></is></c><c r="B4"><v>19.5</v></c></row>` +
	sheetTail

// xlsxItems are workbooks that are small zipped and enormous read
// naively.
func xlsxItems(canary string) ([]Item, error) {
	rels := func(target, mode string) map[string]part {
		return map[string]part{"xl/_rels/workbook.xml.rels": text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="` + target + `"` + mode + `/></Relationships>`)}
	}
	books := []struct {
		name          string
		sheet, shared part
		extra         map[string]part
		control       bool
	}{
		{name: "xlsx-control", sheet: text(controlSheet), control: true},
		// Every row's one cell in the last column, XFD: a reader that
		// pads rows to their last cell makes 16,384 cells of each.
		{name: "xlsx-wide", sheet: repeated(sheetHead, `<row><c r="XFD1"><v>1</v></c></row>`, 200_000, sheetTail)},
		{name: "xlsx-deep", sheet: repeated(sheetHead, `<row><c><v>1</v></c></row>`, 1_000_000, sheetTail)},
		// 400 MB of blanks between the rows.
		{name: "xlsx-zip-bomb", sheet: repeated(sheetHead+`<row r="1"><c r="A1"><v>1</v></c></row>`, " ", 400<<20, sheetTail)},
		// 250,000 strings of 1,000 characters, and a count that says
		// two thousand million, which a reader must not believe.
		{name: "xlsx-shared-strings-bomb", sheet: text(sheetHead + `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>249999</v></c></row>` + sheetTail),
			shared: repeated(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`+"\n"+`<sst xmlns="`+mainNS+`" count="2000000000" uniqueCount="2000000000">`, "<si><t>"+strings.Repeat("A", 1000)+"</t></si>", 250_000, "</sst>")},
		{name: "xlsx-merge-everything", sheet: text(sheetHead + `<row r="1"><c r="A1"><v>1</v></c></row></sheetData><mergeCells count="1"><mergeCell ref="A1:XFD1048576"/></mergeCells></worksheet>`)},
		{name: "xlsx-dimension-lie", sheet: text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" + `<worksheet xmlns="` + mainNS + `"><dimension ref="A1:XFD1048576"/><cols><col min="1" max="16384" width="255" customWidth="1"/></cols><sheetData><row r="1048576" ht="409" customHeight="1"><c r="XFD1048576"><v>1</v></c></row>` + sheetTail)},
		{name: "xlsx-external-entity", sheet: text(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" + `<!DOCTYPE worksheet [ <!ENTITY x SYSTEM "` + fileURL(canary) + `"> ]><worksheet xmlns="` + mainNS + `"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>&x;</t></is></c></row>` + sheetTail)},
		{name: "xlsx-sheet-outside", sheet: text(controlSheet), extra: rels(fileURL(canary), ` TargetMode="External"`)},
		{name: "xlsx-sheet-traversal", sheet: text(controlSheet), extra: rels("../../../../../../../../proc/self/environ", "")},
	}
	var out []Item
	for _, b := range books {
		data, err := workbook(b.sheet, b.shared, b.extra)
		if err != nil {
			return nil, err
		}
		out = append(out, Item{Name: b.name, Filename: b.name + ".xlsx", ContentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Data: data, Control: b.control})
	}
	return out, nil
}
