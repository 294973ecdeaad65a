// Package layout reads the layout of a form — a picture of it, a PDF page
// or a spreadsheet — into a schema a report template can be built from:
// the page size, the cells of text with their boxes, the rows and columns
// they line up in, label/value pairs and table regions.
//
// Pictures and PDF pages are read with the tesseract OCR program (Debian
// packages tesseract-ocr and tesseract-ocr-chi-sim, Chinese and English),
// PDF pages are first drawn with pdftoppm (Debian package poppler-utils).
// Spreadsheets (XLSX) need no OCR: their cells, merged ranges, column widths
// and row heights give the layout exactly.
package layout

import (
	"context"
	"errors"
	"fmt"
)

// Kinds of input, as Detect names them.
const (
	KindImage = "image"
	KindPDF   = "pdf"
	KindXLSX  = "xlsx"
)

// ErrUnknownFormat is returned for input that is neither a picture (PNG,
// JPEG, GIF, TIFF, BMP, WebP), a PDF, nor an XLSX workbook.
var ErrUnknownFormat = errors.New("not a picture (PNG, JPEG, GIF, TIFF, BMP, WebP), PDF or XLSX workbook")

// Layout is the layout of one page of a form. Coordinates are pixels from
// the top left of the page (for a spreadsheet, of its first cell, at 96
// pixels to the inch).
type Layout struct {
	// Source is the kind of input it was read from: image, pdf or xlsx.
	Source string `json:"source"`
	// Width and Height are the page's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// DPI is how many pixels make an inch, 0 when the input does not say
	// (a picture without resolution).
	DPI float64 `json:"dpi,omitempty"`
	// Cells are the pieces of text, in reading order: top to bottom, then
	// left to right.
	Cells []Cell `json:"cells"`
	// Rows are the lines the cells sit on, top to bottom.
	Rows []Row `json:"rows"`
	// Columns are the vertical bands the cells of rows with more than one
	// cell line up in, left to right.
	Columns []Span `json:"columns"`
	// Pairs are labels with the value beside or after them ("客户：" and
	// "张三", "Date:" and an empty box).
	Pairs []Pair `json:"pairs"`
	// Tables are runs of rows whose cells line up in the same columns.
	Tables []Table `json:"tables"`
	// Rules are the long straight lines of a picture or PDF page (table
	// borders, underlines), each as a box as thick as the line; for a
	// spreadsheet, its cells' borders, a run of bordered edges along one
	// grid line being one rule.
	Rules []Box `json:"rules"`
	// TotalRows is how many rows of text the page holds: len(Rows).
	TotalRows int `json:"total_rows"`
}

// Box is a rectangle in pixels.
type Box struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Right is the box's right edge, X+W.
func (b Box) Right() int { return b.X + b.W }

// Bottom is the box's bottom edge, Y+H.
func (b Box) Bottom() int { return b.Y + b.H }

// Cell is one piece of text: a phrase OCR read as one, or a spreadsheet
// cell (a merged range being one cell).
type Cell struct {
	Text string `json:"text"`
	// Box is the text's box; for a spreadsheet the cell's (or merged
	// range's) box.
	Box Box `json:"box"`
	// Row indexes Layout.Rows; Col indexes Layout.Columns, -1 when the
	// cell lies in none (a title across the page).
	Row int `json:"row"`
	Col int `json:"col"`
	// Confidence is OCR's, 0 to 100 (the lowest of its words); 100 for a
	// spreadsheet.
	Confidence float64 `json:"confidence"`
	// Bold is set for a spreadsheet cell with a bold font.
	Bold bool `json:"bold,omitempty"`
	// Ref is the spreadsheet cell ("A1", or "A1:D1" when merged).
	Ref string `json:"ref,omitempty"`
	// Align is a spreadsheet cell's horizontal alignment, as
	// JasperReports names it: "Center" or "Right" ("" for left or none).
	Align string `json:"align,omitempty"`
}

// Row is a line of cells.
type Row struct {
	// Y and H bound the row's cells vertically.
	Y int `json:"y"`
	H int `json:"h"`
	// Cells index Layout.Cells, left to right.
	Cells []int `json:"cells"`
}

// Span is a band of the page from X to X+W.
type Span struct {
	X int `json:"x"`
	W int `json:"w"`
}

// Pair is a label and its value. Value is -1 when the label has no cell
// after it (an empty box to fill in); when label and value are one
// cell ("客户：张三"), Value is the label's cell and Text the part after
// the colon.
type Pair struct {
	Label string `json:"label"`
	// LabelCell and Value index Layout.Cells.
	LabelCell int `json:"label_cell"`
	Value     int `json:"value"`
	// Text is the value's text as read.
	Text string `json:"text"`
}

// Table is a run of rows whose cells line up in the same columns. Its
// first row is taken as the header.
type Table struct {
	Box Box `json:"box"`
	// FirstRow and LastRow index Layout.Rows (both included).
	FirstRow int `json:"first_row"`
	LastRow  int `json:"last_row"`
	// Columns are the table's own columns, left to right.
	Columns []Span `json:"columns"`
	// Header is the text of the first row by column ("" where empty).
	Header []string `json:"header"`
	// Body is the text of the rows after the header, by column.
	Body [][]string `json:"body"`
}

// Options tune reading. The zero value reads page 1 with the default
// page segmentation.
type Options struct {
	// PSM is tesseract's page segmentation mode (default 6: one block of
	// text, which reads the cells of a form best once its rules are
	// removed).
	PSM int
	// Page is the PDF page to read, from 1 (default 1).
	Page int
	// Sheet is the spreadsheet's sheet (default: the active one).
	Sheet string
	// MinConfidence drops OCR words below it (default 20).
	MinConfidence float64
}

func (o Options) psm() int {
	if o.PSM <= 0 {
		return 6
	}
	return o.PSM
}

func (o Options) page() int {
	if o.Page <= 0 {
		return 1
	}
	return o.Page
}

func (o Options) minConfidence() float64 {
	if o.MinConfidence <= 0 {
		return 20
	}
	return o.MinConfidence
}

// Read reads the layout of data, a picture, a PDF, an XLSX workbook or a
// DOCX document,
// told apart by content rather than by name.
func Read(ctx context.Context, data []byte, opts Options) (*Layout, error) {
	switch k := Detect(data); k {
	case KindImage:
		return FromImage(ctx, data, opts)
	case KindPDF:
		return FromPDF(ctx, data, opts)
	case KindXLSX:
		return FromXLSX(ctx, data, opts)
	case KindDOCX:
		return FromDOCX(ctx, data, opts)
	default:
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
}
