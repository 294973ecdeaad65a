package render

import (
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// MaxPixels bounds the image Page draws, whatever it is asked: 24
// million pixels (96 MB), room for an A3 page at 300 dpi. A larger page
// is drawn at the resolution that fits, as is one wider or taller than
// MaxSide.
const MaxPixels = 24_000_000

// MaxSide bounds the width and the height of the image Page draws, in
// pixels, so that neither is absurd when the other is small.
const MaxSide = 16384

// maxFontPixels bounds the size glyphs are drawn at (a glyph's mask
// takes its size squared).
const maxFontPixels = 1024

// maxFaces bounds the cache of font faces, one a size.
const maxFaces = 64

// maxCoord bounds a pixel coordinate, so that no arithmetic on one
// overflows.
const maxCoord = 1 << 24

// Rasterizer draws laid-out pages as images. It is safe for concurrent
// use; it draws one page at a time.
type Rasterizer struct {
	path  string
	font  *opentype.Font
	mu    sync.Mutex // guards faces, which font faces draw with
	faces map[float64]font.Face
}

// NewRasterizer reads the TrueType font at path (DefaultFont, or the
// font the caller was configured with).
func NewRasterizer(path string) (*Rasterizer, error) {
	b, err := readFont(path)
	if err != nil {
		return nil, err
	}
	f, err := opentype.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("render: parse the font: %w", err)
	}
	return &Rasterizer{path: path, font: f, faces: map[float64]font.Face{}}, nil
}

// Font is the path of the font r draws with, for a PDF of the same
// pages.
func (r *Rasterizer) Font() string { return r.path }

func (r *Rasterizer) face(px float64) font.Face {
	if !(px > 0) {
		px = 1 // zero, negative or NaN
	}
	px = math.Round(min(px, maxFontPixels)*4) / 4
	if f, ok := r.faces[px]; ok {
		return f
	}
	if len(r.faces) >= maxFaces {
		clear(r.faces)
	}
	f, err := opentype.NewFace(r.font, &opentype.FaceOptions{Size: px, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		f, _ = opentype.NewFace(r.font, &opentype.FaceOptions{Size: 10, DPI: 72})
	}
	r.faces[px] = f
	return f
}

// Page draws page p of res at dpi dots per inch, on white; at a lower
// resolution when the page would take more than MaxPixels.
func (r *Rasterizer) Page(res *Result, p int, dpi float64) *image.RGBA {
	w, h, s := pageSize(res.Width, res.Height, dpi/72)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = drawItems(&imageCanvas{r: r, img: img, s: s}, res.Pages[p].Items) // drawing an image does not fail
	return img
}

// pageSize is the size in pixels of a page width × height points drawn
// at s pixels a point, and the scale it is drawn at: s, or less so that
// it fits in MaxPixels.
func pageSize(width, height, s float64) (w, h int, scale float64) {
	clamp := func(v float64) float64 {
		if !(v >= 1) {
			return 1 // less than a point, negative or NaN
		}
		return min(v, maxCoord)
	}
	width, height = clamp(width), clamp(height)
	if !(s > 0) || math.IsInf(s, 0) {
		s = 1
	}
	if width*s*height*s > MaxPixels {
		s = math.Sqrt(MaxPixels / (width * height))
	}
	s = min(s, MaxSide/width, MaxSide/height)
	w = min(max(1, int(math.Ceil(width*s))), MaxSide)
	h = min(max(1, int(math.Ceil(height*s))), MaxSide, MaxPixels/w)
	return w, h, s
}

// imageCanvas draws on an image at s pixels a point.
type imageCanvas struct {
	r   *Rasterizer
	img *image.RGBA
	s   float64
}

// px is the pixel of v points, within ±maxCoord.
func (c *imageCanvas) px(v float64) int {
	v *= c.s
	switch {
	case v > maxCoord:
		return maxCoord
	case !(v > -maxCoord): // or NaN
		return -maxCoord
	}
	return int(math.Round(v))
}

// steps is how many points to set to draw a curve of length points:
// one a pixel, at most a few times around the image.
func (c *imageCanvas) steps(length float64) int {
	b := c.img.Bounds()
	limit := 4 * (b.Dx() + b.Dy())
	n := length * c.s
	if !(n >= 0) {
		return 0
	}
	return int(min(n, float64(limit)))
}

func (c *imageCanvas) fill(a area) {
	rect := image.Rect(c.px(a.x), c.px(a.y), c.px(a.x+a.w), c.px(a.y+a.h))
	if rect.Dx() == 0 {
		rect.Max.X++
	}
	if rect.Dy() == 0 {
		rect.Max.Y++
	}
	draw.Draw(c.img, rect, image.NewUniform(a.c), image.Point{}, draw.Over)
}

func (c *imageCanvas) line(it Item) {
	st := it.Style
	switch {
	case it.H <= 1:
		c.fill(area{it.X, it.Y, it.W, st.LineWidth, st.Fore})
	case it.W <= 1:
		c.fill(area{it.X, it.Y, st.LineWidth, it.H, st.Fore})
	default:
		n := c.steps(math.Max(math.Abs(it.W), math.Abs(it.H)))
		for i := 0; i <= n; i++ {
			t := float64(i) / float64(n)
			c.img.SetRGBA(c.px(it.X+t*it.W), c.px(it.Y+t*it.H), st.Fore)
		}
	}
}

func (c *imageCanvas) ellipse(it Item) {
	cx, cy, rx, ry := it.X+it.W/2, it.Y+it.H/2, it.W/2, it.H/2
	n := c.steps(2 * math.Pi * math.Max(math.Abs(rx), math.Abs(ry)))
	for i := 0; i < n; i++ {
		a := 2 * math.Pi * float64(i) / float64(n)
		c.img.SetRGBA(c.px(cx+rx*math.Cos(a)), c.px(cy+ry*math.Sin(a)), it.Style.Fore)
	}
}

func (c *imageCanvas) text(it Item) error {
	it = textStyle(it)
	st := it.Style
	face := c.r.face(st.FontSize * c.s)
	measure := func(t string) float64 { return float64(font.MeasureString(face, t)) / 64 / c.s }
	asc := float64(face.Metrics().Ascent) / 64
	// Text is clipped to its box: a glyph wider than the box, or the
	// slack of the last line, never reaches the element beside or below.
	box := image.Rect(c.px(it.X), c.px(it.Y), c.px(it.X+it.W), c.px(it.Y+it.H)).Intersect(c.img.Bounds())
	if box.Empty() {
		return nil
	}
	d := font.Drawer{Dst: c.img.SubImage(box).(*image.RGBA), Src: image.NewUniform(st.Fore), Face: face}
	for _, l := range textLines(it, measure) {
		base := fixed.P(c.px(l.x), int(math.Round(l.y*c.s+asc)))
		d.Dot = base
		d.DrawString(l.text)
		if st.Bold {
			d.Dot = base.Add(fixed.P(1, 0))
			d.DrawString(l.text)
		}
	}
	return nil
}

// WritePNGs draws every page of res at dpi into dir as NAME-1.png,
// NAME-2.png… and returns their paths.
func (r *Rasterizer) WritePNGs(res *Result, dpi float64, dir, name string) ([]string, error) {
	var paths []string
	for i := range res.Pages {
		p := filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, i+1))
		f, err := os.Create(p)
		if err != nil {
			return paths, fmt.Errorf("render: %w", err)
		}
		err = png.Encode(f, r.Page(res, i, dpi))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, fmt.Errorf("render: write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
