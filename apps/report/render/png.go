package render

import (
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Rasterizer draws laid-out pages as images.
type Rasterizer struct {
	font  *opentype.Font
	faces map[float64]font.Face
}

// NewRasterizer reads the TrueType font at path (FontPath() for the
// default).
func NewRasterizer(path string) (*Rasterizer, error) {
	b, err := readFont(path)
	if err != nil {
		return nil, err
	}
	f, err := opentype.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("render: parse font %s: %w", path, err)
	}
	return &Rasterizer{font: f, faces: map[float64]font.Face{}}, nil
}

func (r *Rasterizer) face(px float64) font.Face {
	px = math.Round(px*4) / 4
	if f, ok := r.faces[px]; ok {
		return f
	}
	f, err := opentype.NewFace(r.font, &opentype.FaceOptions{Size: px, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		f, _ = opentype.NewFace(r.font, &opentype.FaceOptions{Size: 10, DPI: 72})
	}
	r.faces[px] = f
	return f
}

// Page draws page p of res at dpi dots per inch, on white.
func (r *Rasterizer) Page(res *Result, p int, dpi float64) *image.RGBA {
	s := dpi / 72
	img := image.NewRGBA(image.Rect(0, 0, int(math.Ceil(res.Width*s)), int(math.Ceil(res.Height*s))))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	_ = drawItems(&imageCanvas{r: r, img: img, s: s}, res.Pages[p].Items) // drawing an image does not fail
	return img
}

// imageCanvas draws on an image at s pixels a point.
type imageCanvas struct {
	r   *Rasterizer
	img *image.RGBA
	s   float64
}

func (c *imageCanvas) px(v float64) int { return int(math.Round(v * c.s)) }

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
		n := int(math.Max(it.W, it.H) * c.s)
		for i := 0; i <= n; i++ {
			t := float64(i) / float64(n)
			c.img.Set(c.px(it.X+t*it.W), c.px(it.Y+t*it.H), st.Fore)
		}
	}
}

func (c *imageCanvas) ellipse(it Item) {
	cx, cy, rx, ry := it.X+it.W/2, it.Y+it.H/2, it.W/2, it.H/2
	n := int(2 * math.Pi * math.Max(rx, ry) * c.s)
	for i := 0; i < n; i++ {
		a := 2 * math.Pi * float64(i) / float64(n)
		c.img.Set(c.px(cx+rx*math.Cos(a)), c.px(cy+ry*math.Sin(a)), it.Style.Fore)
	}
}

func (c *imageCanvas) text(it Item) error {
	it = textStyle(it)
	st := it.Style
	face := c.r.face(st.FontSize * c.s)
	measure := func(t string) float64 { return float64(font.MeasureString(face, t)) / 64 / c.s }
	asc := float64(face.Metrics().Ascent) / 64
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(st.Fore), Face: face}
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
