package compare_test

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"testing"

	"github.com/loomkit/loom/apps/report/compare"
)

// page is an A4 page at 150 dpi with a grid of black boxes, the box at
// (row, col) = skip left out.
func page(skip image.Point) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 1240, 1754))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for r := range 8 {
		for c := range 4 {
			if r == skip.Y && c == skip.X {
				continue
			}
			x, y := 100+c*270, 100+r*200
			draw.Draw(img, image.Rect(x, y, x+200, y+120), image.NewUniform(color.Black), image.Point{}, draw.Src)
			draw.Draw(img, image.Rect(x+10, y+10, x+190, y+110), image.White, image.Point{}, draw.Src)
		}
	}
	return img
}

func TestSSIM(t *testing.T) {
	a := page(image.Pt(-1, -1))
	if r := compare.SSIM(a, a, 4, 4); math.Abs(r.SSIM-1) > 1e-9 {
		t.Errorf("an image against itself: %v", r.SSIM)
	}
	// one box missing in the bottom right quarter
	b := page(image.Pt(3, 7))
	r := compare.SSIM(a, b, 4, 4)
	if r.SSIM >= 1 || r.SSIM < 0.9 {
		t.Errorf("one box of 32 missing: SSIM %v", r.SSIM)
	}
	if row, col := r.Worst(); row != 3 || col != 3 {
		t.Errorf("worst region %d,%d, want 3,3 (%v)", row, col, r.Regions)
	}
	if r.Regions[0][0] != 1 {
		t.Errorf("an unchanged region: %v", r.Regions[0][0])
	}
	// a half-size copy is scaled back and is still very alike
	small := image.NewRGBA(image.Rect(0, 0, 620, 877))
	for y := range 877 {
		for x := range 620 {
			small.Set(x, y, a.At(2*x, 2*y))
		}
	}
	if s := compare.SSIM(a, small, 1, 1).SSIM; s < 0.7 || s >= 1 {
		t.Errorf("a half-size copy: %v", s)
	}
	// a blank page is far from it
	blank := page(image.Pt(-1, -1))
	draw.Draw(blank, blank.Bounds(), image.White, image.Point{}, draw.Src)
	if s := compare.SSIM(a, blank, 1, 1).SSIM; s > r.SSIM || s > 0.9 {
		t.Errorf("a blank page: %v", s)
	}
}

// BenchmarkSSIM compares two A4 pages at 150 dpi.
func BenchmarkSSIM(b *testing.B) {
	a, c := page(image.Pt(-1, -1)), page(image.Pt(2, 3))
	for b.Loop() {
		compare.SSIM(a, c, 8, 8)
	}
}

// An image larger than MaxPixels is compared scaled down: the result is
// the same shape, and alike images are still alike.
func TestSSIMLarge(t *testing.T) {
	big := image.NewGray(image.Rect(0, 0, 3000, 2000)) // 6 million pixels
	for i := range big.Pix {
		big.Pix[i] = uint8(i % 251)
	}
	r := compare.SSIM(big, big, 3, 3)
	if r.SSIM < 0.99 || len(r.Regions) != 3 || len(r.Regions[2]) != 3 {
		t.Errorf("an image against itself: SSIM %.3f, regions %v", r.SSIM, r.Regions)
	}
}

// shifted is img moved right and down by d pixels.
func shifted(img *image.RGBA, d int) *image.RGBA {
	out := image.NewRGBA(img.Rect)
	draw.Draw(out, out.Rect, image.White, image.Point{}, draw.Src)
	draw.Draw(out, out.Rect.Add(image.Pt(d, d)), img, image.Point{}, draw.Src)
	return out
}

// TestForm: over the form's ink, a blank page and one missing half the
// boxes score low, where SSIM over the whole page calls them alike; the
// same page drawn a pixel away scores high.
func TestForm(t *testing.T) {
	form := page(image.Pt(-1, -1))
	blank := image.NewRGBA(form.Rect)
	draw.Draw(blank, blank.Rect, image.White, image.Point{}, draw.Src)
	half := page(image.Pt(-1, -1))
	draw.Draw(half, image.Rect(0, 900, 1240, 1754), image.White, image.Point{}, draw.Src)
	near := shifted(form, 1)

	faithful := compare.Form(near, form, 3, 3).SSIM
	if faithful < 0.8 {
		t.Errorf("the form a pixel away: %.3f", faithful)
	}
	for name, img := range map[string]*image.RGBA{"blank": blank, "half": half} {
		whole, f := compare.SSIM(img, form, 1, 1).SSIM, compare.Form(img, form, 3, 3)
		t.Logf("%s: SSIM %.3f over the page, %.3f over the form's ink (faithful %.3f)", name, whole, f.SSIM, faithful)
		if f.SSIM > 0.6 || f.SSIM >= faithful-0.3 {
			t.Errorf("%s page scores %.3f over the form", name, f.SSIM)
		}
	}
	// the missing half is where the difference is
	if row, _ := compare.Form(half, form, 3, 3).Worst(); row != 2 {
		t.Errorf("worst row %d, want the bottom", row)
	}
	// a picture with no ink is compared as SSIM does
	if s := compare.Form(blank, blank, 1, 1).SSIM; math.Abs(s-1) > 1e-9 {
		t.Errorf("blank against blank: %v", s)
	}
}
