package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"regexp"
	"strings"

	"github.com/loomkit/loom/datasource"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Options shape a rendered report. The zero value is a Chinese page
// with charts 800×420.
type Options struct {
	// Title is the page's title; empty takes the report's first
	// heading, or a default title in the locale's language.
	Title string
	// Locale picks the language of the page's own text (notes, default
	// title): "en…" is English, anything else Chinese.
	Locale string
	// ChartWidth and ChartHeight are a chart's size in SVG units; the
	// page scales charts to its width.
	ChartWidth, ChartHeight int
	// MeasureFont is a TrueType font with Chinese glyphs that measures
	// chart text for layout (the browser draws it with its own fonts);
	// empty looks for Debian's fonts-arphic-gbsn00lp. Without one,
	// Chinese labels are measured narrow and may overlap.
	MeasureFont string
	// ChartsAsTables, for Markdown, replaces each chart block with its
	// data as a Markdown table; otherwise chart blocks stay as JSON.
	ChartsAsTables bool
}

func (o Options) chartSize() (int, int) {
	w, h := o.ChartWidth, o.ChartHeight
	if w <= 0 || w > 4000 {
		w = 800
	}
	if h <= 0 || h > 4000 {
		h = 420
	}
	return w, h
}

func isEnglish(locale string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(locale)), "en")
}

// Page is a report rendered as one self-contained HTML page.
type Page struct {
	// HTML is the whole page: inline CSS, charts as inline SVG, no
	// scripts and nothing loaded from the network.
	HTML []byte
	// Title is the page's title.
	Title string
	// Charts counts the charts drawn.
	Charts int
	// Problems are the notes shown for chart blocks that could not be
	// drawn, in page order.
	Problems []string
}

// HTML renders a report's Markdown as one HTML page. Chart blocks
// (fenced ```echarts, ```echart or ```chart, holding an ECharts option as
// JSON) become SVG drawn on the server; a block that cannot be drawn
// becomes a visible note with its source, never an error. Raw HTML in
// the Markdown is left out, images other than inline data (PNG, JPEG,
// GIF, WebP) show their text, and links to other documents show their
// address as text, so the page runs nothing and fetches nothing.
// The error is only for a failure to render the Markdown at all.
func HTML(markdown string, opts Options) (Page, error) {
	src := []byte(markdown)
	st := &renderState{opts: opts}
	md := goldmark.New(
		goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(st, 100))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(st, 100))),
	)
	var body bytes.Buffer
	if err := md.Convert(src, &body); err != nil {
		return Page{}, fmt.Errorf("rendering report markdown: %w", err)
	}
	title := cmp.Or(strings.TrimSpace(opts.Title), st.heading, defaultTitle(opts.Locale))
	lang := "zh-CN"
	if isEnglish(opts.Locale) {
		lang = "en"
	}
	var page bytes.Buffer
	err := pageTemplate.Execute(&page, map[string]any{
		"Lang":  lang,
		"Title": title,
		"CSS":   template.CSS(pageCSS),
		"Body":  template.HTML(body.String()), // goldmark without raw HTML, charts escaped by the library
	})
	if err != nil {
		return Page{}, fmt.Errorf("writing report page: %w", err)
	}
	return Page{HTML: page.Bytes(), Title: title, Charts: st.charts, Problems: st.problems}, nil
}

func defaultTitle(locale string) string {
	if isEnglish(locale) {
		return "Data analysis report"
	}
	return "数据分析报告"
}

//go:embed page.css
var pageCSS string

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<main class="report">
{{.Body}}</main>
</body>
</html>
`))

// renderState is one rendering: it turns chart blocks into chart nodes
// while the Markdown is parsed, and draws them, links and images when
// the page is written.
type renderState struct {
	opts     Options
	heading  string
	charts   int
	problems []string
}

// kindChart is the node a chart block becomes.
var kindChart = ast.NewNodeKind("ReportChart")

// chartNode is a drawn chart, or the note for one that could not be.
type chartNode struct {
	ast.BaseBlock
	title  string
	svg    []byte
	note   string
	source []byte
}

func (n *chartNode) Kind() ast.NodeKind { return kindChart }

func (n *chartNode) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"title": n.title, "note": n.note}, nil)
}

// Transform replaces each chart block with its drawing, and notes the
// first heading for the page's title.
func (st *renderState) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var blocks []*ast.FencedCodeBlock
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if st.heading == "" {
				st.heading = strings.TrimSpace(nodeText(n, source))
			}
		case *ast.FencedCodeBlock:
			if isChartBlock(string(n.Language(source))) {
				blocks = append(blocks, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, b := range blocks {
		src := blockText(b, source)
		node := &chartNode{source: src}
		opt, err := parseChart(src)
		if err == nil {
			node.title = opt.Title.Text
			node.svg, err = drawChart(opt, st.opts)
		}
		if err != nil {
			node.note = chartProblem(err, st.opts.Locale)
			st.problems = append(st.problems, node.note)
		} else {
			st.charts++
		}
		b.Parent().ReplaceChild(b.Parent(), b, node)
	}
}

// blockText is a fenced block's content.
func blockText(b *ast.FencedCodeBlock, source []byte) []byte {
	var out []byte
	for i := range b.Lines().Len() {
		line := b.Lines().At(i)
		out = append(out, line.Value(source)...)
	}
	return out
}

// nodeText is the plain text under an inline node.
func nodeText(n ast.Node, source []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(source))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		default:
			b.WriteString(nodeText(c, source))
		}
	}
	return b.String()
}

// RegisterFuncs draws chart nodes, links and images.
func (st *renderState) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(kindChart, st.renderChart)
	r.Register(ast.KindLink, st.renderLink)
	r.Register(ast.KindAutoLink, st.renderAutoLink)
	r.Register(ast.KindImage, st.renderImage)
	r.Register(ast.KindRawHTML, st.renderRawHTML)
}

// renderRawHTML leaves out inline HTML markup (a tag of an HTML element,
// a comment) and writes anything else that only looks like a tag as the
// text it is: a value such as "Widget <Pro>" or "<unknown>" in a table
// the model copied stays whole.
func (st *renderState) renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	var raw strings.Builder
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		raw.Write(seg.Value(source))
	}
	if m := tagRE.FindStringSubmatch(raw.String()); m == nil || htmlElements[strings.ToLower(m[1])] {
		_, _ = w.WriteString("<!-- raw HTML omitted -->")
		return ast.WalkSkipChildren, nil
	}
	_, _ = w.WriteString(html.EscapeString(raw.String()))
	return ast.WalkSkipChildren, nil
}

// tagRE is the name of an inline tag, opening or closing.
var tagRE = regexp.MustCompile(`^</?([A-Za-z][A-Za-z0-9-]*)`)

// htmlElements are the names of HTML and SVG elements (and a few of
// obsolete HTML), the tags left out as markup.
var htmlElements = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Fields(`a abbr acronym address applet area article aside audio b base basefont bdi bdo bgsound big blink
		blockquote body br button canvas caption center circle cite code col colgroup data datalist dd del details dfn dialog dir div dl dt
		ellipse em embed fieldset figcaption figure font footer form frame frameset g h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe
		image img input ins isindex kbd keygen label legend li line link listing main map mark marquee math menu menuitem meta meter nav
		nobr noembed noframes noscript object ol optgroup option output p param path picture plaintext polygon polyline portal pre progress
		q rect rp rt rtc ruby s samp script search section select slot small source spacer span strike strong style sub summary sup svg
		table tbody td template text textarea tfoot th thead time title tr track tt u ul use var video wbr xmp`) {
		m[name] = true
	}
	return m
}()

func (st *renderState) renderChart(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*chartNode)
	if n.note != "" {
		summary := "原始内容"
		if isEnglish(st.opts.Locale) {
			summary = "Source"
		}
		fmt.Fprintf(w, "<div class=\"chart-note\" role=\"note\"><p>%s</p><details><summary>%s</summary><pre><code>%s</code></pre></details></div>\n",
			html.EscapeString(n.note), summary, html.EscapeString(string(n.source)))
		return ast.WalkContinue, nil
	}
	fmt.Fprintf(w, "<figure class=\"chart\" role=\"img\" aria-label=\"%s\">", html.EscapeString(n.title))
	_, _ = w.Write(n.svg)
	_, _ = w.WriteString("</figure>\n")
	return ast.WalkContinue, nil
}

// renderLink keeps links within the page; a link elsewhere shows its
// text and its address, so the page has nothing to follow offline.
func (st *renderState) renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	dest := string(n.Destination)
	if strings.HasPrefix(dest, "#") {
		if entering {
			fmt.Fprintf(w, "<a href=\"%s\">", html.EscapeString(dest))
		} else {
			_, _ = w.WriteString("</a>")
		}
		return ast.WalkContinue, nil
	}
	if !entering && dest != "" && strings.TrimSpace(nodeText(n, source)) != dest {
		fmt.Fprintf(w, " <span class=\"url\">(%s)</span>", html.EscapeString(dest))
	}
	return ast.WalkContinue, nil
}

func (st *renderState) renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		n := node.(*ast.AutoLink)
		fmt.Fprintf(w, "<span class=\"url\">%s</span>", html.EscapeString(string(n.Label(source))))
	}
	return ast.WalkContinue, nil
}

// renderImage shows images carried in the page (data: PNG, JPEG, GIF,
// WebP, as the sandbox's plots are embedded); any other image shows its
// text.
func (st *renderState) renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	alt := nodeText(n, source)
	dest := string(n.Destination)
	if isDataImage(dest) {
		fmt.Fprintf(w, "<img src=\"%s\" alt=\"%s\">", html.EscapeString(dest), html.EscapeString(alt))
		return ast.WalkSkipChildren, nil
	}
	label := "图片"
	if isEnglish(st.opts.Locale) {
		label = "image"
	}
	if alt != "" {
		label += ": " + alt
	}
	fmt.Fprintf(w, "<span class=\"image-missing\">[%s]</span>", html.EscapeString(label))
	return ast.WalkSkipChildren, nil
}

func isDataImage(dest string) bool {
	for _, p := range []string{"data:image/png;", "data:image/jpeg;", "data:image/gif;", "data:image/webp;"} {
		if strings.HasPrefix(dest, p) {
			return true
		}
	}
	return false
}

// Renderer renders reports with fixed Options, the locale given per
// call; it is what an agent's report step holds.
type Renderer struct {
	Options Options
}

// HTML renders markdown as one self-contained HTML page (see the
// package function HTML).
func (r Renderer) HTML(markdown, locale string) ([]byte, error) {
	o := r.Options
	o.Locale = locale
	p, err := HTML(markdown, o)
	if err != nil {
		return nil, err
	}
	return p.HTML, nil
}

// Markdown returns markdown for download (see the package function
// Markdown).
func (r Renderer) Markdown(markdown, locale string) string {
	o := r.Options
	o.Locale = locale
	return Markdown(markdown, o)
}

// Chart is FromResult's chart for res as a chart block, or false when
// the result has nothing to draw.
func (r Renderer) Chart(res datasource.Result, title string) (string, bool) {
	c, ok := FromResult(res, title)
	if !ok {
		return "", false
	}
	return c.Block(), true
}
