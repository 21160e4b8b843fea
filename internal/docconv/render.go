package docconv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// Bounds of a page's rasterisation for OCR.
const (
	// maxRenderPixels bounds the bitmap a page is rendered into (one byte
	// a pixel, inside PDFium's memory): a page too large for it at the
	// chosen resolution is rendered at a lower one, down to minRenderDPI.
	maxRenderPixels = 24_000_000
	minRenderDPI    = 72
	// maxPageObjects bounds the objects of a page looked at for images,
	// and maxFormDepth the form XObjects looked into.
	maxPageObjects = 20_000
	maxFormDepth   = 4
	// inkLevel is the gray level under which a pixel is ink, and minInk
	// the ink pixels a page needs not to be blank.
	inkLevel = 128
	minInk   = 64
)

// pageImages is what a page's images are: the share of the page's area
// they cover, the pixels of the largest, and its resolution as drawn.
type pageImages struct {
	Cover     float64
	MaxPixels int64
	// DPI is the resolution of the image that covers the most of the
	// page, 0 without images.
	DPI  int
	area float64
}

// imagesOf looks at the page's images, into form XObjects too (an image
// drawn by a form counts with the form's bounds). It stops looking after
// maxPageObjects objects.
func imagesOf(inst pdfium.Pdfium, page references.FPDF_PAGE, width, height float64) pageImages {
	var im pageImages
	pageArea := width * height
	seen := 0
	var walk func(count int, get func(int) (references.FPDF_PAGEOBJECT, error), depth int) bool
	walk = func(count int, get func(int) (references.FPDF_PAGEOBJECT, error), depth int) bool {
		found := false
		for k := 0; k < count && seen < maxPageObjects; k++ {
			seen++
			obj, err := get(k)
			if err != nil {
				continue
			}
			t, err := inst.FPDFPageObj_GetType(&requests.FPDFPageObj_GetType{PageObject: obj})
			if err != nil {
				continue
			}
			switch t.Type {
			case enums.FPDF_PAGEOBJ_IMAGE:
				found = true
				px, err := inst.FPDFImageObj_GetImagePixelSize(&requests.FPDFImageObj_GetImagePixelSize{ImageObject: obj})
				if err != nil {
					continue
				}
				pixels := int64(px.Width) * int64(px.Height)
				im.MaxPixels = max(im.MaxPixels, pixels)
				if depth > 0 {
					continue
				}
				b, err := inst.FPDFPageObj_GetBounds(&requests.FPDFPageObj_GetBounds{PageObject: obj})
				if err != nil {
					continue
				}
				area := boxArea(float64(b.Left), float64(b.Bottom), float64(b.Right), float64(b.Top), width, height)
				im.Cover += area / pageArea
				if area > im.area && b.Right > b.Left {
					im.area = area
					im.DPI = int(math.Round(float64(px.Width) / (float64(b.Right-b.Left) / 72)))
				}
			case enums.FPDF_PAGEOBJ_FORM:
				if depth >= maxFormDepth {
					continue
				}
				n, err := inst.FPDFFormObj_CountObjects(&requests.FPDFFormObj_CountObjects{PageObject: obj})
				if err != nil {
					continue
				}
				form := obj
				if walk(n.Count, func(i int) (references.FPDF_PAGEOBJECT, error) {
					o, err := inst.FPDFFormObj_GetObject(&requests.FPDFFormObj_GetObject{PageObject: form, Index: uint64(i)})
					if err != nil {
						return "", err
					}
					return o.PageObject, nil
				}, depth+1) && depth == 0 {
					found = true
					if b, err := inst.FPDFPageObj_GetBounds(&requests.FPDFPageObj_GetBounds{PageObject: obj}); err == nil {
						im.Cover += boxArea(float64(b.Left), float64(b.Bottom), float64(b.Right), float64(b.Top), width, height) / pageArea
					}
				}
			}
		}
		return found
	}
	objs, err := inst.FPDFPage_CountObjects(&requests.FPDFPage_CountObjects{Page: requests.Page{ByReference: &page}})
	if err != nil {
		return im
	}
	walk(objs.Count, func(i int) (references.FPDF_PAGEOBJECT, error) {
		o, err := inst.FPDFPage_GetObject(&requests.FPDFPage_GetObject{Page: requests.Page{ByReference: &page}, Index: i})
		if err != nil {
			return "", err
		}
		return o.PageObject, nil
	}, 0)
	im.Cover = min(im.Cover, 1)
	return im
}

// boxArea is the area of a box clipped to the page.
func boxArea(left, bottom, right, top, width, height float64) float64 {
	w := min(right, width) - max(left, 0)
	h := min(top, height) - max(bottom, 0)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// ocrDPI is the resolution a page is rendered at for OCR: DefaultOCRDPI,
// or the page's image's own resolution when that is lower but at least
// MinOCRDPI; lowered so that the bitmap stays within maxRenderPixels.
// ok is false for a page too large to render even at minRenderDPI.
func ocrDPI(imageDPI int, width, height float64) (dpi int, ok bool) {
	dpi = DefaultOCRDPI
	if imageDPI >= MinOCRDPI && imageDPI < dpi {
		dpi = imageDPI
	}
	inches := (width / 72) * (height / 72)
	if inches <= 0 {
		return dpi, false
	}
	if fit := int(math.Sqrt(maxRenderPixels / inches)); fit < dpi {
		dpi = fit
	}
	return dpi, dpi >= minRenderDPI
}

// renderGray renders page i (from 0) of doc at dpi into a grayscale PGM
// at path, and says whether it has ink.
func renderGray(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i, dpi int, width, height float64, path string) (ink bool, err error) {
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: i})
	if err != nil {
		return false, fmt.Errorf("load page %d: %w", i+1, err)
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	w, h := rasterSize(width, height, dpi)
	if w <= 0 || h <= 0 {
		return false, fmt.Errorf("page %d has no area", i+1)
	}
	bm, err := inst.FPDFBitmap_CreateEx(&requests.FPDFBitmap_CreateEx{Width: w, Height: h, Format: enums.FPDF_BITMAP_FORMAT_GRAY, Pointer: uint64(0)})
	if err != nil {
		return false, fmt.Errorf("page %d bitmap: %w", i+1, err)
	}
	defer inst.FPDFBitmap_Destroy(&requests.FPDFBitmap_Destroy{Bitmap: bm.Bitmap})
	if _, err := inst.FPDFBitmap_FillRect(&requests.FPDFBitmap_FillRect{Bitmap: bm.Bitmap, Width: w, Height: h, Color: 0xFFFFFFFF}); err != nil {
		return false, fmt.Errorf("page %d bitmap: %w", i+1, err)
	}
	if _, err := inst.FPDF_RenderPageBitmap(&requests.FPDF_RenderPageBitmap{Bitmap: bm.Bitmap, Page: requests.Page{ByReference: &page.Page},
		SizeX: w, SizeY: h, Flags: enums.FPDF_RENDER_FLAG_ANNOT | enums.FPDF_RENDER_FLAG_RENDER_LIMITEDIMAGECACHE}); err != nil {
		return false, fmt.Errorf("render page %d: %w", i+1, err)
	}
	stride, err := inst.FPDFBitmap_GetStride(&requests.FPDFBitmap_GetStride{Bitmap: bm.Bitmap})
	if err != nil {
		return false, fmt.Errorf("page %d bitmap: %w", i+1, err)
	}
	buf, err := inst.FPDFBitmap_GetBuffer(&requests.FPDFBitmap_GetBuffer{Bitmap: bm.Bitmap})
	if err != nil || len(buf.Buffer) < stride.Stride*h || stride.Stride < w {
		return false, fmt.Errorf("page %d bitmap: %v", i+1, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 256<<10)
	fmt.Fprintf(bw, "P5\n%d %d\n255\n", w, h)
	dark := 0
	for y := 0; y < h; y++ {
		row := buf.Buffer[y*stride.Stride : y*stride.Stride+w]
		if dark < minInk {
			for _, p := range row {
				if p < inkLevel {
					dark++
				}
			}
		}
		if _, err := bw.Write(row); err != nil {
			return false, err
		}
	}
	if err := bw.Flush(); err != nil {
		return false, err
	}
	return dark >= minInk, f.Close()
}

// rasterSize is the pixels of a page of width × height points rendered
// at dpi for OCR.
func rasterSize(width, height float64, dpi int) (w, h int) {
	return int(math.Ceil(width * float64(dpi) / 72)), int(math.Ceil(height * float64(dpi) / 72))
}

// pageRenderer renders pages of a document open in a PDFium instance.
type pageRenderer struct {
	inst   pdfium.Pdfium
	doc    references.FPDF_DOCUMENT
	limits Limits
}

// render rasterises a job's page into a grayscale PGM at file, and says
// whether it has ink. A page PDFium cannot render within its memory fails
// as *Error naming the limit.
func (r *pageRenderer) render(j ocrJob, file string) (bool, error) {
	ink, err := renderGray(r.inst, r.doc, j.Page-1, j.DPI, j.Width, j.Height, file)
	if err != nil {
		var bad *Error
		if errors.As(err, &bad) {
			return false, err
		}
		return false, overLimit(fmt.Sprintf("has a page (%d) that PDFium cannot rasterise for OCR in its memory (%v)", j.Page, err), r.limits.PDFMemoryBytes>>20, "MiB", "MEMAGENT_PDF_MEMORY_MB")
	}
	return ink, nil
}

// renderDocument opens the PDF at path for fn's renderer, in a PDFium
// instance of its own (withDocument).
func (c *Converter) renderDocument(ctx context.Context, path string, fn func(*pageRenderer) error) error {
	return c.withDocument(ctx, path, func(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		return fn(&pageRenderer{inst: inst, doc: doc, limits: c.Limits.withDefaults()})
	})
}
