// Package compare measures how alike two images are with SSIM, the
// structural similarity index: one number for the whole image and a map
// of regions, so an explanation can say where a rendering differs from
// the image it should look like.
package compare

import (
	"image"
	"image/draw"
	"math"

	xdraw "golang.org/x/image/draw"
)

// Window is the side of the square windows SSIM is computed over, and
// Stride how far apart they start.
const (
	Window = 8
	Stride = 4
)

// SSIM constants for 8-bit images: (0.01·255)² and (0.03·255)².
const (
	c1 = 6.5025
	c2 = 58.5225
)

// Result is the similarity of two images.
type Result struct {
	// SSIM is the mean over all windows, 1 for identical images.
	SSIM float64
	// Regions is the mean SSIM of each cell of a Rows×Cols grid over the
	// image, row by row.
	Rows, Cols int
	Regions    [][]float64
}

// Worst returns the row and column of the least similar region.
func (r Result) Worst() (row, col int) {
	best := 2.0
	for i, rs := range r.Regions {
		for j, v := range rs {
			if v < best {
				best, row, col = v, i, j
			}
		}
	}
	return row, col
}

// MaxPixels is the largest size, in pixels, images are compared at: a
// larger a is scaled down (keeping its shape) to it first, so that the
// comparison's memory is bounded whatever it is given (an A4 page at 150
// dpi has 2.2 million).
const MaxPixels = 4_000_000

// SSIM compares a with b in grey, b scaled to a's size first (and both
// scaled down when a has more than MaxPixels pixels), with a rows×cols
// grid of regions.
func SSIM(a, b image.Image, rows, cols int) Result {
	ga, gb := grays(a, b)
	return measure(ga, gb, nil, nil, ga.Rect, rows, cols)
}

// grays are a and b in grey at a's size, or at most MaxPixels of it
// (keeping its shape).
func grays(a, b image.Image) (*image.Gray, *image.Gray) {
	size := a.Bounds().Size()
	if px := float64(size.X) * float64(size.Y); px > MaxPixels {
		f := math.Sqrt(MaxPixels / px)
		size = image.Pt(max(int(float64(size.X)*f), 1), max(int(float64(size.Y)*f), 1))
	}
	return gray(a, size), gray(b, size)
}

// Ink is the grey level below which a pixel is taken as ink, the marks of
// a form: text, rules and boxes.
const Ink = 160

// Form compares a rendering a with the picture of a form b over the
// form's area: b is scaled to a's size (both scaled down past
// MaxPixels), both are cropped to the bounding box of b's ink, blurred by
// a few pixels so that a glyph drawn by another font or a rule a pixel
// away still matches, and only the windows where either image has ink
// count. White paper matching white paper proves nothing, so a blank
// page, or one that lacks a table of the form, scores low, where SSIM
// over the whole page would call it alike. A picture with no ink is
// compared as SSIM does.
func Form(a, b image.Image, rows, cols int) Result {
	ga, gb := grays(a, b)
	box := inkBounds(gb)
	if box.Empty() {
		return measure(ga, gb, nil, nil, ga.Rect, rows, cols)
	}
	box = box.Inset(-Window).Intersect(ga.Rect)
	r := max(1, min(ga.Rect.Dx(), ga.Rect.Dy())/200) // 2 px on an A4 page at 72 dpi
	return measure(blur(ga, r), blur(gb, r), ga, gb, box, rows, cols)
}

// inkBounds is the smallest rectangle holding every pixel of g darker
// than Ink.
func inkBounds(g *image.Gray) image.Rectangle {
	var box image.Rectangle
	for y := g.Rect.Min.Y; y < g.Rect.Max.Y; y++ {
		row := g.Pix[(y-g.Rect.Min.Y)*g.Stride:]
		for x := range g.Rect.Dx() {
			if row[x] < Ink {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box
}

// blur is g with a box blur of radius r, done as two passes.
func blur(g *image.Gray, r int) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	tmp := image.NewGray(g.Rect)
	out := image.NewGray(g.Rect)
	for y := range h {
		src, dst := g.Pix[y*g.Stride:y*g.Stride+w], tmp.Pix[y*tmp.Stride:]
		for x := range w {
			sum, n := 0, 0
			for k := max(0, x-r); k <= min(w-1, x+r); k++ {
				sum += int(src[k])
				n++
			}
			dst[x] = uint8(sum / n)
		}
	}
	for x := range w {
		for y := range h {
			sum, n := 0, 0
			for k := max(0, y-r); k <= min(h-1, y+r); k++ {
				sum += int(tmp.Pix[k*tmp.Stride+x])
				n++
			}
			out.Pix[y*out.Stride+x] = uint8(sum / n)
		}
	}
	return out
}

// measure is SSIM of ga and gb (the same size) over rect, with a
// rows×cols grid of regions over rect; with ia and ib (the same size),
// only the windows where either has a pixel darker than Ink count.
func measure(ga, gb, ia, ib *image.Gray, rect image.Rectangle, rows, cols int) Result {
	inked := ia != nil
	w, h := rect.Dx(), rect.Dy()
	// sums of x, y, x², y² and xy over Stride×Stride blocks: a window is
	// Window/Stride blocks a side; ink marks the blocks with ink
	bw, bh := w/Stride, h/Stride
	blocks := make([][5]float64, bw*bh)
	ink := make([]bool, bw*bh)
	for y := 0; y < bh*Stride; y++ {
		pa := ga.Pix[(rect.Min.Y+y)*ga.Stride+rect.Min.X:]
		pb := gb.Pix[(rect.Min.Y+y)*gb.Stride+rect.Min.X:]
		row := blocks[(y/Stride)*bw:]
		irow := ink[(y/Stride)*bw:]
		for x := 0; x < bw*Stride; x++ {
			p, q := float64(pa[x]), float64(pb[x])
			s := &row[x/Stride]
			s[0] += p
			s[1] += q
			s[2] += p * p
			s[3] += q * q
			s[4] += p * q
			if inked && (ia.Pix[(rect.Min.Y+y)*ia.Stride+rect.Min.X+x] < Ink || ib.Pix[(rect.Min.Y+y)*ib.Stride+rect.Min.X+x] < Ink) {
				irow[x/Stride] = true
			}
		}
	}
	const k = Window / Stride
	res := Result{Rows: rows, Cols: cols, Regions: make([][]float64, rows)}
	counts := make([][]int, rows)
	for i := range rows {
		res.Regions[i] = make([]float64, cols)
		counts[i] = make([]int, cols)
	}
	n := float64(Window * Window)
	total, windows := 0.0, 0
	for by := 0; by+k <= bh; by++ {
		for bx := 0; bx+k <= bw; bx++ {
			var s [5]float64
			use := !inked
			for dy := range k {
				for dx := range k {
					j := (by+dy)*bw + bx + dx
					for i := range 5 {
						s[i] += blocks[j][i]
					}
					use = use || ink[j]
				}
			}
			if !use {
				continue
			}
			y, x := by*Stride, bx*Stride
			mx, my := s[0]/n, s[1]/n
			vx, vy := s[2]/n-mx*mx, s[3]/n-my*my
			cov := s[4]/n - mx*my
			v := (2*mx*my + c1) * (2*cov + c2) / ((mx*mx + my*my + c1) * (vx + vy + c2))
			total += v
			windows++
			ry, rx := (y+Window/2)*rows/h, (x+Window/2)*cols/w
			res.Regions[ry][rx] += v
			counts[ry][rx]++
		}
	}
	if windows > 0 {
		res.SSIM = total / float64(windows)
	}
	for i := range rows {
		for j := range cols {
			if counts[i][j] > 0 {
				res.Regions[i][j] /= float64(counts[i][j])
			} else {
				res.Regions[i][j] = 1
			}
		}
	}
	return res
}

// gray is img in grey at size, scaled when it is another size.
func gray(img image.Image, size image.Point) *image.Gray {
	g := image.NewGray(image.Rectangle{Max: size})
	if rgba, ok := img.(*image.RGBA); ok && rgba.Rect.Size() == size {
		for y := range size.Y {
			src := rgba.Pix[y*rgba.Stride : y*rgba.Stride+4*size.X]
			dst := g.Pix[y*g.Stride:]
			for x := range size.X {
				// ITU-R 601 luma, as image/color's GrayModel
				r, gr, b := uint32(src[4*x]), uint32(src[4*x+1]), uint32(src[4*x+2])
				dst[x] = uint8((19595*r + 38470*gr + 7471*b + 1<<15) >> 16)
			}
		}
		return g
	}
	if img.Bounds().Size() == size {
		draw.Draw(g, g.Rect, img, img.Bounds().Min, draw.Src)
		return g
	}
	xdraw.ApproxBiLinear.Scale(g, g.Rect, img, img.Bounds(), draw.Src, nil)
	return g
}

// Passes says whether r reaches threshold: its SSIM, and every region's
// at least half of it, so that a form half of which is missing fails
// even when the half drawn matches.
func (r Result) Passes(threshold float64) bool {
	if r.SSIM < threshold {
		return false
	}
	for _, row := range r.Regions {
		for _, v := range row {
			if v < threshold/2 {
				return false
			}
		}
	}
	return true
}
