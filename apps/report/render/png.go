package render

import (
	"fmt"
	"image"
	"image/color"
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
	px := func(v float64) int { return int(math.Round(v * s)) }
	fill := func(x, y, w, h float64, c color.RGBA) {
		rect := image.Rect(px(x), px(y), px(x+w), px(y+h))
		if rect.Dx() == 0 {
			rect.Max.X++
		}
		if rect.Dy() == 0 {
			rect.Max.Y++
		}
		draw.Draw(img, rect, image.NewUniform(c), image.Point{}, draw.Over)
	}
	for _, it := range res.Pages[p].Items {
		st := it.Style
		switch it.Kind {
		case Rect, Text, Placeholder:
			for _, a := range fills(it) {
				fill(a.x, a.y, a.w, a.h, a.c)
			}
			if it.Kind != Rect {
				r.text(img, it, s)
			}
		case Line:
			lw := st.LineWidth
			switch {
			case it.H <= 1:
				fill(it.X, it.Y, it.W, lw, st.Fore)
			case it.W <= 1:
				fill(it.X, it.Y, lw, it.H, st.Fore)
			default:
				n := int(math.Max(it.W, it.H) * s)
				for i := 0; i <= n; i++ {
					t := float64(i) / float64(n)
					img.Set(px(it.X+t*it.W), px(it.Y+t*it.H), st.Fore)
				}
			}
		case Ellipse:
			cx, cy, rx, ry := it.X+it.W/2, it.Y+it.H/2, it.W/2, it.H/2
			n := int(2 * math.Pi * math.Max(rx, ry) * s)
			for i := 0; i < n; i++ {
				a := 2 * math.Pi * float64(i) / float64(n)
				img.Set(px(cx+rx*math.Cos(a)), px(cy+ry*math.Sin(a)), st.Fore)
			}
		}
	}
	return img
}

func (r *Rasterizer) text(img *image.RGBA, it Item, s float64) {
	it = textStyle(it)
	st := it.Style
	face := r.face(st.FontSize * s)
	measure := func(t string) float64 { return float64(font.MeasureString(face, t)) / 64 / s }
	asc := float64(face.Metrics().Ascent) / 64
	d := font.Drawer{Dst: img, Src: image.NewUniform(st.Fore), Face: face}
	for _, l := range textLines(it, measure) {
		base := fixed.P(int(math.Round(l.x*s)), int(math.Round(l.y*s+asc)))
		d.Dot = base
		d.DrawString(l.text)
		if st.Bold {
			d.Dot = base.Add(fixed.P(1, 0))
			d.DrawString(l.text)
		}
	}
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
