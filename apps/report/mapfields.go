package report

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/report/jrxml"
)

var placeholderRE = regexp.MustCompile(`\bfield_(\d+)\b`)

// MapFields renames the placeholders field_1, field_2 … of a skeleton
// (in $F{} and in the field declarations) after the labels beside them:
// the static text to a field's left in the same band and row, or, for a
// field with none, the column header above it (the columnHeader band's
// text over the field's column, else a text above it in its own band).
// A label becomes a Java identifier (letters, digits and _, common report
// words in Chinese given their English names). A placeholder with no
// label beside it takes the label of labels (the form's labels in reading
// order) at its number, as before; one whose label gives no name, or a
// name already taken, keeps its placeholder.
func MapFields(src string, labels []string) string {
	return renameFields(src, fieldNames(src, labels))
}

// renameFields renames the placeholders of src by names (a placeholder's
// number to its name).
func renameFields(src string, names map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(src, func(m string) string {
		if n, ok := names[m[len("field_"):]]; ok {
			return n
		}
		return m
	})
}

// fieldNames are the names MapFields gives the placeholders of src, by
// their numbers.
func fieldNames(src string, labels []string) map[string]string {
	names := map[string]string{}
	used := map[string]bool{}
	beside := labelsBeside(src, used)
	nums := make([]int, 0, len(beside))
	for n := range beside {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	for _, n := range nums {
		name := fieldName(beside[n])
		if name == "" || used[name] {
			continue
		}
		used[name] = true
		names[strconv.Itoa(n)] = name
	}
	for i, l := range labels {
		k := strconv.Itoa(i + 1)
		if _, ok := names[k]; ok {
			continue
		}
		if _, ok := beside[i+1]; ok {
			continue // it has a label of its own, whose name was taken
		}
		n := fieldName(l)
		if n == "" || used[n] {
			continue
		}
		used[n] = true
		names[k] = n
	}
	return names
}

// box is a static text or a text field of a band, with its place on the
// page relative to the band (frames' offsets added).
type box struct {
	x, y, w, h int
	text       string // a static text's text
	field      int    // a text field's placeholder number; 0 for none
	isField    bool
}

// labelsBeside finds, for each placeholder field_N shown in a text field,
// the text of the label beside it; it marks in used the names of the
// fields the template declares that are not placeholders. A template that
// cannot be read gives none.
func labelsBeside(src string, used map[string]bool) map[int]string {
	out := map[int]string{}
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		return out
	}
	var header []box // the columnHeader bands' texts
	type band struct {
		kind  string
		boxes []box
	}
	var bands []band
	doc.Root.Walk(func(e *jrxml.Element) bool {
		if e.Name == "field" && e.Parent == doc.Root {
			if n, ok := e.Attr("name"); ok && !placeholderRE.MatchString(n) {
				used[n] = true
			}
			return false
		}
		if e.Name == "band" && e.Parent != nil && e.Parent.Name != "jasperReport" {
			b := band{kind: e.Parent.Name, boxes: boxes(e, 0, 0, nil)}
			if b.kind == "columnHeader" {
				header = append(header, b.boxes...)
			}
			bands = append(bands, b)
			return false
		}
		return true
	})
	for _, b := range bands {
		for i, f := range b.boxes {
			if f.field == 0 {
				continue
			}
			if _, ok := out[f.field]; ok {
				continue
			}
			if l, ok := leftLabel(i, b.boxes); ok {
				out[f.field] = l
			} else if l, ok := aboveLabel(f, header, true); ok && b.kind == "detail" {
				out[f.field] = l
			} else if l, ok := aboveLabel(f, b.boxes, false); ok {
				out[f.field] = l
			}
		}
	}
	return out
}

// boxes collects the static texts and text fields under e, frames'
// offsets (dx, dy) added.
func boxes(e *jrxml.Element, dx, dy int, out []box) []box {
	for _, c := range e.Children {
		switch c.Name {
		case "staticText", "textField":
			r := c.Child("reportElement")
			if r == nil {
				continue
			}
			b := box{x: dx + attrInt(r, "x"), y: dy + attrInt(r, "y"), w: attrInt(r, "width"), h: attrInt(r, "height")}
			if c.Name == "staticText" {
				if t := c.Child("text"); t != nil {
					b.text = strings.TrimSpace(t.Text())
				}
			} else {
				b.isField = true
				if x := c.Child("textFieldExpression"); x != nil {
					if ms := placeholderRE.FindAllStringSubmatch(x.Text(), -1); len(ms) == 1 {
						b.field, _ = strconv.Atoi(ms[0][1])
					}
				}
			}
			out = append(out, b)
		case "frame":
			fx, fy := dx, dy
			if r := c.Child("reportElement"); r != nil {
				fx, fy = dx+attrInt(r, "x"), dy+attrInt(r, "y")
			}
			out = boxes(c, fx, fy, out)
		}
	}
	return out
}

// leftLabel is the static text nearest to the left of bs[k] (a text
// field) in its row, when no other text field lies between them and it
// ends no further from the field than the field is wide (a title far to
// the left is no label).
func leftLabel(k int, bs []box) (string, bool) {
	f := bs[k]
	var best *box
	for i := range bs {
		b := &bs[i]
		if i == k {
			continue
		}
		if b.x+b.w > f.x+2 || !sameRow(*b, f) {
			continue
		}
		if best == nil || b.x+b.w > best.x+best.w {
			best = b
		}
	}
	if best == nil || best.isField || best.text == "" || f.x-(best.x+best.w) > f.w {
		return "", false
	}
	return best.text, true
}

// aboveLabel is the static text over f's column that overlaps it most:
// any in bs (a column header band) when header, else one above f.
func aboveLabel(f box, bs []box, header bool) (string, bool) {
	best, most := "", 0
	for _, b := range bs {
		if b.isField || b.text == "" || !header && b.y+b.h > f.y+2 {
			continue
		}
		if o := min(b.x+b.w, f.x+f.w) - max(b.x, f.x); o > most && 2*o >= min(b.w, f.w) {
			best, most = b.text, o
		}
	}
	return best, best != ""
}

// sameRow says whether a and b share most of the shorter one's height.
func sameRow(a, b box) bool {
	o := min(a.y+a.h, b.y+b.h) - max(a.y, b.y)
	return o > 0 && 2*o >= min(a.h, b.h)
}

// attrInt is an integer attribute, 0 when absent or not a number.
func attrInt(e *jrxml.Element, name string) int {
	v, _ := e.Attr(name)
	n, _ := strconv.Atoi(strings.TrimSpace(v))
	return n
}
