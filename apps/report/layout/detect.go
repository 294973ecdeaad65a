package layout

import (
	"archive/zip"
	"bytes"
)

// Detect names the kind of input data is by its first bytes (and, for a
// ZIP file, whether it holds a workbook or a document): KindImage,
// KindPDF, KindXLSX, KindDOCX, or "" for anything else. A file's name is never consulted.
func Detect(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")),
		bytes.HasPrefix(data, []byte("\xff\xd8\xff")),
		bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")),
		bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")),
		bytes.HasPrefix(data, []byte("BM")) && len(data) > 26,
		len(data) > 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WEBP":
		return KindImage
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return KindPDF
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		if z, err := zip.NewReader(bytes.NewReader(data), int64(len(data))); err == nil {
			for _, f := range z.File {
				switch f.Name {
				case "xl/workbook.xml":
					return KindXLSX
				case "word/document.xml":
					return KindDOCX
				}
			}
		}
	}
	return ""
}
