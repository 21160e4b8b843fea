package docconvtest

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
)

// Degradation is what a worn scanner and a careless hand do to a page:
// a small rotation, a lower resolution, and noise.
type Degradation struct {
	// Degrees rotates the page (counter-clockwise) about its centre.
	Degrees float64
	// Scale resamples it: 2.0/3 turns a 300 DPI page into a 200 DPI one.
	Scale float64
	// Noise is the standard deviation of Gaussian noise added to each
	// pixel, in gray levels; Speckle the share of pixels flipped to
	// black or white (dust).
	Noise   float64
	Speckle float64
	Seed    uint64
}

// Degrade returns src (any image, read as gray) degraded as d says.
func Degrade(src image.Image, d Degradation) *image.Gray {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	g, ok := src.(*image.Gray)
	if !ok || b.Min != (image.Point{}) {
		g = image.NewGray(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				g.Pix[y*g.Stride+x] = color.GrayModel.Convert(src.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y
			}
		}
	}
	gray := func(x, y int) float64 {
		if x < 0 || y < 0 || x >= w || y >= h {
			return 255
		}
		return float64(g.Pix[y*g.Stride+x])
	}
	scale := d.Scale
	if scale <= 0 {
		scale = 1
	}
	ow, oh := int(float64(w)*scale), int(float64(h)*scale)
	out := image.NewGray(image.Rect(0, 0, ow, oh))
	sin, cos := math.Sincos(d.Degrees * math.Pi / 180)
	cx, cy := float64(w)/2, float64(h)/2
	rng := rand.New(rand.NewPCG(d.Seed, 0x5ca4))
	for y := 0; y < oh; y++ {
		for x := 0; x < ow; x++ {
			// The output pixel's centre in source pixels, rotated back.
			sx, sy := (float64(x)+0.5)/scale-cx, (float64(y)+0.5)/scale-cy
			rx, ry := cos*sx-sin*sy+cx-0.5, sin*sx+cos*sy+cy-0.5
			var v float64
			if scale < 1 {
				// An area average over the source pixels the output pixel
				// covers (a scanner's sensor), sampled on a grid.
				n := int(math.Ceil(1 / scale))
				for j := 0; j < n; j++ {
					for i := 0; i < n; i++ {
						v += bilinear(gray, rx+(float64(i)+0.5)/float64(n)/scale-0.5/scale, ry+(float64(j)+0.5)/float64(n)/scale-0.5/scale)
					}
				}
				v /= float64(n * n)
			} else {
				v = bilinear(gray, rx, ry)
			}
			v += rng.NormFloat64() * d.Noise
			if d.Speckle > 0 && rng.Float64() < d.Speckle {
				v = float64(255 * rng.IntN(2))
			}
			out.Pix[y*out.Stride+x] = uint8(math.Max(0, math.Min(255, math.Round(v))))
		}
	}
	return out
}

func bilinear(gray func(x, y int) float64, x, y float64) float64 {
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := x-float64(x0), y-float64(y0)
	top := gray(x0, y0)*(1-fx) + gray(x0+1, y0)*fx
	bottom := gray(x0, y0+1)*(1-fx) + gray(x0+1, y0+1)*fx
	return top*(1-fy) + bottom*fy
}
