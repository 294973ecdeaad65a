package report

import (
	"archive/zip"
	"bytes"
)

// detectLayoutKind tells an image, a PDF or an XLSX workbook by content.
func detectLayoutKind(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")), bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return KindImage
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return KindPDF
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		if z, err := zip.NewReader(bytes.NewReader(data), int64(len(data))); err == nil {
			for _, f := range z.File {
				if f.Name == "xl/workbook.xml" {
					return KindXLSX
				}
			}
		}
	}
	return ""
}
