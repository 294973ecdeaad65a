package hostile

import (
	"bytes"
	"fmt"
	"strings"
)

// pdfFile writes objects 1… (their bodies) as a PDF with a correct
// cross-reference table; object 1 is the catalog.
func pdfFile(objects []string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// stream is a stream object of content.
func stream(content string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
}

// onePage is a PDF of one page of the media box with a ruled box and a
// line of text; pages is what the page tree claims to count.
func onePage(mediaBox string, pages int) []byte {
	content := "1 w 50 600 400 100 re S 50 650 m 450 650 l S BT /F1 18 Tf 60 670 Td (Customer) Tj ET"
	return pdfFile([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [3 0 R] /Count %d >>", pages),
		"<< /Type /Page /Parent 2 0 R /MediaBox [" + mediaBox + "] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		stream(content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	})
}

// manyPages is a PDF of n pages, each drawing the same content.
func manyPages(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", stream("50 600 400 100 re S")}
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 4+i)
		objs = append(objs, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 3 0 R >>")
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	return pdfFile(objs)
}

// pdfItems are PDFs with pages too large to draw, too many pages, a page
// tree that loops, and bytes that are no PDF past their first line.
func pdfItems(string) ([]Item, error) {
	loop := pdfFile([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
		"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
	})
	malformed := onePage("0 0 595 842", 1)
	malformed = append(malformed[:len(malformed)*2/3:len(malformed)*2/3], []byte("\x00\xff garbage 9999999999 0 obj << /Length -1 >> stream")...)
	items := []struct {
		name    string
		data    []byte
		control bool
	}{
		{"pdf-control", onePage("0 0 595 842", 1), true},
		{"pdf-huge-page", onePage("0 0 200000 200000", 1), false},
		{"pdf-page-count-lie", onePage("0 0 595 842", 2_000_000_000), false},
		{"pdf-many-pages", manyPages(50_000), false},
		{"pdf-page-tree-loop", loop, false},
		{"pdf-malformed", malformed, false},
		{"pdf-header-only", []byte("%PDF-1.7\n"), false},
	}
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = Item{Name: it.name, Filename: it.name + ".pdf", ContentType: "application/pdf", Data: it.data, Control: it.control}
	}
	return out, nil
}
