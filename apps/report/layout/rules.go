package layout

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // pictures OCR reads
	_ "image/jpeg"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

// ruleLength is how long, as a fraction of the page's width, a straight
// run of dark pixels must be to count as a table rule rather than a
// stroke of a letter.
const ruleLength = 0.06

// maxRuns is the most runs of pixels joined into rules.
const maxRuns = 5000

// MaxPixels is the largest picture read, in pixels (an A3 page at 300 dpi
// has 17.4 million).
const MaxPixels = 40_000_000

// MaxDecoded is the most memory a picture may take once decoded, in
// bytes: MaxPixels of 8-bit RGBA (4 bytes a pixel), or an A3 page at 300
// dpi of 16-bit RGBA (8 bytes a pixel, 139 MB). Reading it takes a grey
// copy and a mask of a byte a pixel each besides, so one picture costs at
// most about 240 MB of the server's memory, a quarter of its 1 GiB.
const MaxDecoded = 160_000_000

// ErrTooLarge is returned for a picture of more than MaxPixels pixels or
// MaxDecoded bytes decoded, and for a PDF page that would be drawn as one.
var ErrTooLarge = errors.New("too large to read")

// ErrBadPicture is returned for a picture whose size cannot be read: it
// is never decoded, nor given to OCR.
var ErrBadPicture = errors.New("the picture could not be read")

// CheckPicture refuses a picture before it is decoded: one whose header
// cannot be read, one of more than MaxPixels pixels, or one that would
// take more than MaxDecoded bytes decoded (width × height × the bytes a
// pixel of its colour model takes; an interlaced PNG twice that, as its
// passes are decoded apart first).
func CheckPicture(img []byte) error {
	c, format, err := image.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadPicture, err)
	}
	if c.Width <= 0 || c.Height <= 0 {
		return fmt.Errorf("%w: it is %dx%d pixels", ErrBadPicture, c.Width, c.Height)
	}
	px := int64(c.Width) * int64(c.Height)
	if px > MaxPixels {
		return fmt.Errorf("the picture is %w: %dx%d pixels, at most %d million", ErrTooLarge, c.Width, c.Height, MaxPixels/1_000_000)
	}
	bpp := bytesPerPixel(c.ColorModel)
	switch {
	case format == "png" && len(img) > 28 && img[28] == 1:
		bpp *= 2
	case format == "jpeg" && progressive(img):
		// Besides the picture, the coefficients of every block: 2 bytes
		// each, 64 a block of 8×8 pixels, for each of up to 3 components.
		bpp += 6
	}
	if px*bpp > MaxDecoded {
		return fmt.Errorf("the picture is %w: %dx%d pixels at %d bytes a pixel is %d MB decoded, at most %d MB", ErrTooLarge, c.Width, c.Height, bpp, px*bpp/1_000_000, MaxDecoded/1_000_000)
	}
	return nil
}

// progressive says whether a JPEG is progressive: whether its frame
// header, found by walking the markers before it, is SOF2.
func progressive(img []byte) bool {
	for p := 2; p+4 <= len(img) && img[p] == 0xff; {
		m := img[p+1]
		switch {
		case m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce:
			return true
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			return false
		case m == 0xd8 || m == 0x01 || m >= 0xd0 && m <= 0xd7 || m == 0xff:
			p += 2
			continue
		}
		p += 2 + int(img[p+2])<<8 + int(img[p+3])
	}
	return false
}

// bytesPerPixel is how many bytes a pixel of m takes decoded (8, the
// most any decoder uses, for a model it does not know).
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// greyWithoutRules returns the picture img in grey with its long
// horizontal and vertical lines (the rules of a table) painted white, so
// OCR reads the text next to them, and the rules it found; nil when img
// cannot be decoded.
func greyWithoutRules(img []byte) (*image.Gray, []Box) {
	src, _, err := image.Decode(bytes.NewReader(img))
	if err != nil {
		return nil, nil
	}
	g := grey(src)
	w, h := g.Rect.Dx(), g.Rect.Dy()
	minRun := max(int(float64(w)*ruleLength), 20)
	dark := func(x, y int) bool { return g.Pix[y*g.Stride+x] < 128 }
	erase := make([]bool, w*h)
	var hruns, vruns []Box
	// Rows of pixels, then columns: a run of dark pixels minRun long or
	// longer is (part of) a rule.
	runs(h, w, minRun, func(y, x int) bool { return dark(x, y) }, func(y, x0, x1 int) {
		for x := x0; x < x1; x++ {
			erase[y*w+x] = true
		}
		hruns = append(hruns, Box{X: x0, Y: y, W: x1 - x0, H: 1})
	})
	runs(w, h, minRun, dark, func(x, y0, y1 int) {
		for y := y0; y < y1; y++ {
			erase[y*w+x] = true
		}
		vruns = append(vruns, Box{X: x, Y: y0, W: 1, H: y1 - y0})
	})
	for i, e := range erase {
		if e {
			g.Pix[(i/w)*g.Stride+i%w] = 255
		}
	}
	return g, append(thicken(hruns, true), thicken(vruns, false)...)
}

// runs calls found for each run of at least minRun positions that are
// dark along each of n lines of length positions.
func runs(n, length, minRun int, dark func(line, pos int) bool, found func(line, from, to int)) {
	for line := range n {
		for p := 0; p < length; {
			if !dark(line, p) {
				p++
				continue
			}
			e := p
			for e < length && dark(line, e) {
				e++
			}
			if e-p >= minRun {
				found(line, p, e)
			}
			p = e
		}
	}
}

// thicken joins runs of pixels on neighbouring rows (or columns) that
// cover the same stretch into one rule as thick as they are together.
func thicken(runs []Box, horizontal bool) []Box {
	var out []Box
	if len(runs) > maxRuns {
		// A picture with this many long lines is a photo or a pattern, not
		// a form's rules.
		return nil
	}
	near := func(a, b int) bool { return a-b <= 3 && b-a <= 3 }
	for _, r := range runs {
		joined := false
		for i := range out {
			o := &out[i]
			if horizontal && near(o.X, r.X) && near(o.Right(), r.Right()) && r.Y <= o.Bottom() && r.Y >= o.Y {
				*o = union(*o, r)
				joined = true
				break
			}
			if !horizontal && near(o.Y, r.Y) && near(o.Bottom(), r.Bottom()) && r.X <= o.Right() && r.X >= o.X {
				*o = union(*o, r)
				joined = true
				break
			}
		}
		if !joined {
			out = append(out, r)
		}
	}
	return out
}

// grey converts a picture to grey, transparent pixels as paper.
func grey(src image.Image) *image.Gray {
	b := src.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	switch s := src.(type) {
	case *image.Gray:
		for y := range b.Dy() {
			copy(g.Pix[y*g.Stride:y*g.Stride+b.Dx()], s.Pix[(y)*s.Stride:])
		}
		return g
	case *image.RGBA:
		for y := range b.Dy() {
			row := s.Pix[y*s.Stride:]
			for x := range b.Dx() {
				r, gg, bb, a := uint32(row[4*x]), uint32(row[4*x+1]), uint32(row[4*x+2]), uint32(row[4*x+3])
				lum := (299*r + 587*gg + 114*bb) / 1000
				g.Pix[y*g.Stride+x] = uint8(lum + 255 - a)
			}
		}
		return g
	}
	for y := range b.Dy() {
		for x := range b.Dx() {
			r, gg, bb, a := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
			lum := (299*r + 587*gg + 114*bb) / 1000
			lum = (lum*a + 0xffff*(0xffff-a)) / 0xffff
			g.Pix[y*g.Stride+x] = uint8(lum >> 8)
		}
	}
	return g
}
