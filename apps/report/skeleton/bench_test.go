package skeleton_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// BenchmarkFromXLSX reads the layout of the order workbook.
func BenchmarkFromXLSX(b *testing.B) {
	data := orderBook(b)
	for b.Loop() {
		if _, err := layout.FromXLSX(context.Background(), data, layout.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadForm reads the test form's A4 page at 150 dpi: the rules
// removed, tesseract with Chinese and English, the layout built.
func BenchmarkReadForm(b *testing.B) {
	needFont(b)
	need(b, "tesseract", "tesseract-ocr, tesseract-ocr-chi-sim")
	_, png := drawPNG(b, []byte(formJRXML(testForm())), nil)
	for b.Loop() {
		if _, err := layout.Read(context.Background(), png, layout.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild builds the skeleton of the test form's layout.
func BenchmarkBuild(b *testing.B) {
	needFont(b)
	need(b, "tesseract", "tesseract-ocr, tesseract-ocr-chi-sim")
	_, png := drawPNG(b, []byte(formJRXML(testForm())), nil)
	l, err := layout.Read(context.Background(), png, layout.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := skeleton.Build(l); err != nil {
			b.Fatal(err)
		}
	}
}
