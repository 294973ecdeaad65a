package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // uploaded forms may be JPEG
	_ "image/png"
	"regexp"
	"strings"
	"unicode"

	"github.com/loomkit/loom/apps/report/compare"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
)

// kindProgress is the kind of the events refine_layout sends as each
// window is done: a Progress.
const kindProgress graph.Kind = "progress"

// Progress is one window of refine_layout done.
type Progress struct {
	Window     int    `json:"window"`
	Windows    int    `json:"windows"`
	Band       string `json:"band"`
	RolledBack bool   `json:"rolled_back,omitempty"`
}

// window is one piece of a band that refine_layout sends to the model.
type window struct {
	Seq, Band, Index, Of int
	Label                string
	Text                 string
	Layout               string
}

// refined is what became of a window.
type refined struct {
	Text       string
	RolledBack bool
}

// maxLayoutPrompt bounds the layout schema shown with each window.
const maxLayoutPrompt = 6000

// refineLayout sends the band windows of the skeleton to the model in
// parallel (a graph fan-out; the header is never sent), and rolls back a
// window whose element count changed by more than MaxCountChange. Without a
// model the skeleton stays as it is.
func (a *Agent) refineLayout() graph.NodeFunc[State] {
	return graph.Map(a.windows, a.refineWindow, a.joinWindows)
}

// windows cuts the template into the windows of its bands.
func (a *Agent) windows(s State) []window {
	if a.model == nil || s.JRXML == "" {
		return nil
	}
	doc, err := jrxml.Parse([]byte(s.JRXML))
	if err != nil {
		return nil
	}
	layout := ""
	if s.Layout != nil {
		layout = clip(string(s.Layout.Schema), maxLayoutPrompt)
	}
	var out []window
	for i, b := range doc.Decompose().Bands {
		for j, w := range b.Windows {
			out = append(out, window{Band: i, Index: j, Label: b.Label(), Text: w, Layout: layout})
		}
	}
	for i := range out {
		out[i].Seq, out[i].Of = i, len(out)
	}
	return out
}

// refineWindow asks the model to refine one window.
func (a *Agent) refineWindow(ctx context.Context, w window) (refined, error) {
	msgs := []llm.Message{
		llm.System(prompt("refine_layout.md") + "\n\n<layout>\n" + w.Layout + "\n</layout>"),
		llm.User(fmt.Sprintf("Band %s, piece %d:\n```xml\n%s\n```", w.Label, w.Index+1, w.Text)),
	}
	out, err := a.ask(ctx, msgs)
	if err != nil {
		return refined{}, fmt.Errorf("refining %s: %w", w.Label, err)
	}
	r := refined{Text: extractPiece(out)}
	if jrxml.CountChange(countTags(w.Text), countTags(r.Text)) > maxCountChange {
		r = refined{Text: w.Text, RolledBack: true}
	}
	graph.Emit(ctx, kindProgress, Progress{Window: w.Seq + 1, Windows: w.Of, Band: w.Label, RolledBack: r.RolledBack})
	return r, nil
}

// joinWindows puts the refined windows back into the template; when the
// result is not well-formed, the skeleton stays as it was.
func (a *Agent) joinWindows(s State, rs []refined) (State, error) {
	if len(rs) == 0 {
		return s, nil
	}
	doc, err := jrxml.Parse([]byte(s.JRXML))
	if err != nil {
		return s, nil
	}
	dec := doc.Decompose()
	k, rolled := 0, 0
	for i := range dec.Bands {
		for j := range dec.Bands[i].Windows {
			if rs[k].RolledBack {
				rolled++
			}
			dec.Bands[i].Windows[j] = rs[k].Text
			k++
		}
	}
	s.Turn.Windows, s.Turn.RolledBack = len(rs), rolled
	out := string(dec.Reassemble())
	if _, err := jrxml.Parse([]byte(out)); err != nil {
		a.log.Warn("report: the refined template is not well-formed; keeping the skeleton", "err", err)
		s.Turn.RolledBack = len(rs)
		return s, nil
	}
	s.JRXML = out
	return s, nil
}

var tagRE = regexp.MustCompile(`<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)`)

// countTags counts the elements that start in a piece of XML.
func countTags(s string) jrxml.Counts {
	c := jrxml.Counts{ByName: map[string]int{}}
	for _, m := range tagRE.FindAllStringSubmatch(s, -1) {
		c.Total++
		c.ByName[m[2]]++
	}
	return c
}

// zhWords are common words of report labels and their field names.
var zhWords = []struct{ zh, en string }{
	{"客户", "customer"}, {"名称", "name"}, {"姓名", "name"}, {"日期", "date"}, {"金额", "amount"},
	{"数量", "quantity"}, {"单价", "unit_price"}, {"价格", "price"}, {"合计", "total"}, {"总计", "total"},
	{"编号", "no"}, {"单号", "order_no"}, {"订单", "order"}, {"商品", "product"}, {"产品", "product"},
	{"电话", "phone"}, {"地址", "address"}, {"备注", "remark"}, {"部门", "department"}, {"员工", "employee"},
	{"规格", "spec"}, {"单位", "unit"}, {"税额", "tax"}, {"供应商", "supplier"}, {"仓库", "warehouse"},
	{"销售", "sales"}, {"序号", "seq"}, {"城市", "city"}, {"类别", "category"}, {"状态", "status"},
}

// fieldName turns a label into a field name.
func fieldName(label string) string {
	label = strings.TrimRight(strings.TrimSpace(label), ":：")
	if strings.IndexFunc(label, func(r rune) bool { return r < unicode.MaxASCII && unicode.IsLetter(r) }) >= 0 {
		// "客户 Customer": the English part names it.
		label = strings.Map(func(r rune) rune {
			if r >= unicode.MaxASCII {
				return ' '
			}
			return r
		}, label)
	}
	for _, w := range zhWords {
		label = strings.ReplaceAll(label, w.zh, " "+w.en+" ")
	}
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(label) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		default:
			sep = true
		}
	}
	n := b.String()
	if n == "" || unicode.IsDigit(rune(n[0])) {
		return ""
	}
	return n
}

// similarity renders the template's first page and compares it with the
// uploaded image over the form's area (compare.Form): the result and the
// part of the form that differs most.
func (a *Agent) similarity(ctx context.Context, s State) (compare.Result, string, error) {
	u, err := a.store.Upload(ctx, graph.Thread(ctx), s.Source.ID)
	if err != nil {
		return compare.Result{}, "", err
	}
	// Measured before it is decoded: a picture is refused on what it
	// would take in memory, not only on its pixels.
	if err := layout.CheckPicture(u.Data); err != nil {
		return compare.Result{}, "", fmt.Errorf("reading the uploaded image: %w", err)
	}
	want, _, err := image.Decode(bytes.NewReader(u.Data))
	if err != nil {
		return compare.Result{}, "", fmt.Errorf("reading the uploaded image: %w", err)
	}
	got, _, err := a.pageImage(s.JRXML, s.Layout.formRows(), 0, 72)
	if err != nil {
		return compare.Result{}, "", err
	}
	r := compare.Form(got, want, 3, 3)
	row, col := r.Worst()
	return r, [3]string{"top", "middle", "bottom"}[row] + " " + [3]string{"left", "centre", "right"}[col], nil
}
