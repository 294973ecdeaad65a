package hostile

import (
	"archive/zip"
	"bytes"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"strconv"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
)

// The corpus is what it says it is: the controls read as forms, the
// bombs are small and declare what they claim, the items that read a
// file name the canary, and every upload but one fits the 10 MiB limit.
func TestCorpus(t *testing.T) {
	const canary = "/tmp/x/canary.txt"
	items, err := Corpus(canary)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Item{}
	for _, it := range items {
		byName[it.Name] = it
		if len(it.Data) > 10<<20 && it.Name != "too-large" {
			t.Errorf("%s: %d bytes, over the upload limit", it.Name, len(it.Data))
		}
	}
	get := func(name string) Item {
		t.Helper()
		it, ok := byName[name]
		if !ok {
			t.Fatalf("no item %s", name)
		}
		return it
	}
	for _, name := range []string{"jrxml-parameter-entity", "jrxml-general-entity", "jrxml-external-dtd", "jrxml-xinclude", "jrxml-schema-location", "jrxml-no-namespace-schema", "xlsx-external-entity"} {
		it := get(name)
		if strings.HasPrefix(name, "xlsx") {
			it = Item{Data: unzipped(t, it.Data, "xl/worksheets/sheet1.xml")}
		}
		if !bytes.Contains(it.Data, []byte("file://"+canary)) {
			t.Errorf("%s does not name the canary", name)
		}
	}

	// Workbooks: small zipped, large unzipped; the control reads.
	for _, c := range []struct {
		name, part    string
		zipped, unzip int
	}{
		{"xlsx-wide", "xl/worksheets/sheet1.xml", 64 << 10, 7_000_000},
		{"xlsx-deep", "xl/worksheets/sheet1.xml", 1 << 20, 26_000_000},
		{"xlsx-zip-bomb", "xl/worksheets/sheet1.xml", 1 << 20, 400 << 20},
		{"xlsx-shared-strings-bomb", "xl/sharedStrings.xml", 1 << 20, 250_000_000},
	} {
		it := get(c.name)
		if len(it.Data) > c.zipped {
			t.Errorf("%s: %d bytes zipped, want at most %d", c.name, len(it.Data), c.zipped)
		}
		if n := unzippedSize(t, it.Data, c.part); n < uint64(c.unzip) {
			t.Errorf("%s: %s is %d bytes unzipped, want at least %d", c.name, c.part, n, c.unzip)
		}
	}
	f, err := excelize.OpenReader(bytes.NewReader(get("xlsx-control").Data))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.GetCellValue("Sheet1", "B1"); err != nil || v != "金额 Amount" {
		t.Errorf("control workbook B1 = %q, %v", v, err)
	}

	// Pictures: the header declares the size; the boxes decode.
	for _, c := range []struct {
		name, format string
		w, h         int
	}{
		{"png-boxes-no-text", "png", 600, 300},
		{"png-pixel-bomb", "png", 30_000, 30_000},
		{"png-one-long-row", "png", 2_000_000_000, 1},
		{"png-16bit-rgba", "png", 6_320, 6_320},
		{"jpeg-huge-dimensions", "jpeg", 65_500, 65_500},
		{"gif-huge-dimensions", "gif", 65_535, 65_535},
		{"bmp-huge-dimensions", "bmp", 50_000, 50_000},
		{"tiff-huge-dimensions", "tiff", 100_000, 100_000},
	} {
		it := get(c.name)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(it.Data))
		if err != nil || format != c.format || cfg.Width != c.w || cfg.Height != c.h {
			t.Errorf("%s: %s %dx%d (%v), want %s %dx%d", c.name, format, cfg.Width, cfg.Height, err, c.format, c.w, c.h)
		}
		if len(it.Data) > 1<<20 {
			t.Errorf("%s: %d bytes", c.name, len(it.Data))
		}
	}
	if _, _, err := image.Decode(bytes.NewReader(get("png-boxes-no-text").Data)); err != nil {
		t.Errorf("control picture: %v", err)
	}

	// PDFs: the cross-reference table is where startxref says.
	for _, name := range []string{"pdf-control", "pdf-huge-page", "pdf-many-pages", "pdf-page-tree-loop"} {
		data := get(name).Data
		i := bytes.LastIndex(data, []byte("startxref\n"))
		if i < 0 {
			t.Fatalf("%s has no startxref", name)
		}
		off, err := strconv.Atoi(strings.Fields(string(data[i+len("startxref\n"):]))[0])
		if err != nil || !bytes.HasPrefix(data[off:], []byte("xref\n")) {
			t.Errorf("%s: startxref %d does not point at the table (%v)", name, off, err)
		}
	}
	if !bytes.Contains(get("pdf-huge-page").Data, []byte("/MediaBox [0 0 200000 200000]")) {
		t.Error("pdf-huge-page has no huge media box")
	}
}

func unzippedSize(t *testing.T, data []byte, name string) uint64 {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range z.File {
		if f.Name == name {
			return f.UncompressedSize64
		}
	}
	t.Fatalf("no part %s", name)
	return 0
}

func unzipped(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range z.File {
		if f.Name == name {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var b bytes.Buffer
			b.ReadFrom(r)
			return b.Bytes()
		}
	}
	t.Fatalf("no part %s", name)
	return nil
}
