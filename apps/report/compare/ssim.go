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
	size := a.Bounds().Size()
	if px := float64(size.X) * float64(size.Y); px > MaxPixels {
		f := math.Sqrt(MaxPixels / px)
		size = image.Pt(max(int(float64(size.X)*f), 1), max(int(float64(size.Y)*f), 1))
	}
	ga := gray(a, size)
	gb := gray(b, size)
	w, h := ga.Rect.Dx(), ga.Rect.Dy()
	// sums of x, y, x², y² and xy over Stride×Stride blocks: a window is
	// Window/Stride blocks a side
	bw, bh := w/Stride, h/Stride
	blocks := make([][5]float64, bw*bh)
	for y := 0; y < bh*Stride; y++ {
		pa, pb := ga.Pix[y*ga.Stride:], gb.Pix[y*gb.Stride:]
		row := blocks[(y/Stride)*bw:]
		for x := 0; x < bw*Stride; x++ {
			p, q := float64(pa[x]), float64(pb[x])
			s := &row[x/Stride]
			s[0] += p
			s[1] += q
			s[2] += p * p
			s[3] += q * q
			s[4] += p * q
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
			for dy := range k {
				for dx := range k {
					b := &blocks[(by+dy)*bw+bx+dx]
					for i := range 5 {
						s[i] += b[i]
					}
				}
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
