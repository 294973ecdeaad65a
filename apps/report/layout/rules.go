package layout

import (
	"bytes"
	"image"
	_ "image/gif" // pictures OCR reads
	_ "image/jpeg"
	"image/png"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

// ruleLength is how long, as a fraction of the page's width, a straight
// run of dark pixels must be to count as a table rule rather than a
// stroke of a letter.
const ruleLength = 0.06

// withoutRules returns the picture img as a grey PNG with its long
// horizontal and vertical lines — the rules of a table — painted white,
// so OCR reads the text next to them, and the page's size. The page's
// size is 0×0 and img is given back unchanged when it cannot be decoded.
func withoutRules(img []byte) ([]byte, int, int) {
	src, _, err := image.Decode(bytes.NewReader(img))
	if err != nil {
		return img, 0, 0
	}
	b := src.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			r, gg, bb, a := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
			// Transparent pixels are paper.
			lum := (299*r + 587*gg + 114*bb) / 1000
			lum = (lum*a + 0xffff*(0xffff-a)) / 0xffff
			g.Pix[y*g.Stride+x] = uint8(lum >> 8)
		}
	}
	w, h := b.Dx(), b.Dy()
	minRun := max(int(float64(w)*ruleLength), 20)
	dark := func(x, y int) bool { return g.Pix[y*g.Stride+x] < 128 }
	erase := make([]bool, w*h)
	for y := range h {
		for x := 0; x < w; {
			if !dark(x, y) {
				x++
				continue
			}
			e := x
			for e < w && dark(e, y) {
				e++
			}
			if e-x >= minRun {
				for i := x; i < e; i++ {
					erase[y*w+i] = true
				}
			}
			x = e
		}
	}
	for x := range w {
		for y := 0; y < h; {
			if !dark(x, y) {
				y++
				continue
			}
			e := y
			for e < h && dark(x, e) {
				e++
			}
			if e-y >= minRun {
				for i := y; i < e; i++ {
					erase[i*w+x] = true
				}
			}
			y = e
		}
	}
	for i, e := range erase {
		if e {
			g.Pix[(i/w)*g.Stride+i%w] = 255
		}
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, g); err != nil {
		return img, 0, 0
	}
	return out.Bytes(), w, h
}
