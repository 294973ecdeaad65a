package jrxml

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hbollon/go-edlib"
)

// Sizes the checks accept, so that what a template asks to draw stays
// within what a renderer can allocate.
const (
	// MaxPageSize is the largest page width or height, and the largest
	// band height, element size or offset, in points: 14,400 (200
	// inches, 5.08 m) is the largest page PDF viewers such as Acrobat
	// display, so no export of JasperReports' needs more.
	MaxPageSize = 14400
	// MaxFontSize is the largest font size, in points.
	MaxFontSize = 1000
)

// Check runs the structural checks on a parsed template and returns what
// it finds, in document order: the report namespace; required
// attributes and attribute values; child order; that every $F{}, $P{}
// and $V{} is declared; a query when fields are declared (a warning:
// the data may come from a data source instead); page and column sizes,
// at most MaxPageSize; band heights against the page; elements inside
// their band and the page width; and sizes within MaxPageSize and
// MaxFontSize.
func (d *Document) Check() []Problem {
	c := &checker{doc: d}
	c.namespace()
	c.page()
	c.declare()
	d.Root.Walk(func(e *Element) bool {
		if e.Space == Namespace {
			// other namespaces' elements (components) follow their own schemas
			c.attributes(e)
			c.order(e)
		}
		c.sizes(e)
		c.references(e)
		return true
	})
	c.query()
	c.bands()
	c.bounds()
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].Line != c.out[j].Line {
			return c.out[i].Line < c.out[j].Line
		}
		return c.out[i].Column < c.out[j].Column
	})
	return c.out
}

// Errors are the error-level problems among ps.
func Errors(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Severity == Error {
			out = append(out, p)
		}
	}
	return out
}

type checker struct {
	doc *Document
	out []Problem
	// page geometry, with the schema's defaults
	pageWidth, pageHeight, columnWidth, columnCount, columnSpacing int
	left, right, top, bottom                                       int
	ignorePagination                                               bool
	// declared names
	fields, params, vars map[string]bool
	// crosstab names: a crosstab's totals are $V{measure_group_ALL}
	crosstabNames []string
	// hasCrosstab says the report has a crosstab, whose built-in
	// variables its cells and the styles they use may name
	hasCrosstab bool
}

func (c *checker) add(e *Element, sev Severity, check, hint, format string, args ...any) {
	line, col := e.Pos()
	c.out = append(c.out, Problem{Element: e.Name, Line: line, Column: col, Message: fmt.Sprintf(format, args...), Hint: hint, Severity: sev, Check: check})
}

func (c *checker) namespace() {
	r := c.doc.Root
	if r.Name != "jasperReport" {
		c.add(r, Error, "namespace", "a template's root element is jasperReport", "the root element is <%s>, not <jasperReport>", r.Name)
	}
	if ns := r.Space; ns != Namespace {
		c.add(r, Error, "namespace", `declare xmlns="`+Namespace+`" on the root`, "the root element is in namespace %q, not the report namespace", ns)
	}
}

// intAttr reads e's attribute name as an integer, def when absent or not
// a number (attributes() reports that).
func intAttr(e *Element, name string, def int) int {
	v, ok := e.Attr(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	return n
}

func (c *checker) page() {
	r := c.doc.Root
	c.pageWidth, c.pageHeight = intAttr(r, "pageWidth", 595), intAttr(r, "pageHeight", 842)
	c.columnWidth, c.columnCount, c.columnSpacing = intAttr(r, "columnWidth", 555), intAttr(r, "columnCount", 1), intAttr(r, "columnSpacing", 0)
	c.left, c.right, c.top, c.bottom = intAttr(r, "leftMargin", 20), intAttr(r, "rightMargin", 20), intAttr(r, "topMargin", 30), intAttr(r, "bottomMargin", 30)
	c.ignorePagination, _ = boolAttr(r, "isIgnorePagination")
	tooBig := false
	for _, a := range []struct {
		name string
		v    int
	}{{"pageWidth", c.pageWidth}, {"pageHeight", c.pageHeight}} {
		if a.v > MaxPageSize {
			c.add(r, Error, "page", fmt.Sprintf("make %s at most %d (200 inches)", a.name, MaxPageSize), "%s=%d is larger than any page Loom renders", a.name, a.v)
			tooBig = true
		}
	}
	for _, a := range []struct {
		name string
		v    int
	}{{"leftMargin", c.left}, {"rightMargin", c.right}, {"topMargin", c.top}, {"bottomMargin", c.bottom}, {"columnSpacing", c.columnSpacing}, {"columnWidth", c.columnWidth}} {
		if a.v < 0 || a.v > MaxPageSize {
			c.add(r, Error, "page", fmt.Sprintf("%s is from 0 to %d points", a.name, MaxPageSize), "%s=%d is out of range", a.name, a.v)
			tooBig = true
		}
	}
	if tooBig {
		return
	}
	usable := c.pageWidth - c.left - c.right
	if usable <= 0 {
		c.add(r, Error, "page", "make pageWidth larger than leftMargin + rightMargin", "the margins (%d + %d) leave no room on a page %d wide", c.left, c.right, c.pageWidth)
		return
	}
	if c.pageHeight-c.top-c.bottom <= 0 {
		c.add(r, Error, "page", "make pageHeight larger than topMargin + bottomMargin", "the margins (%d + %d) leave no room on a page %d high", c.top, c.bottom, c.pageHeight)
	}
	if c.columnCount < 1 || c.columnCount > usable {
		c.add(r, Error, "page", fmt.Sprintf("columnCount is from 1 to %d, the width between the margins", usable), "columnCount is %d", c.columnCount)
		return
	}
	if need := c.columnCount*c.columnWidth + (c.columnCount-1)*c.columnSpacing; need > usable {
		c.add(r, Error, "page", fmt.Sprintf("make columnWidth at most %d", (usable-(c.columnCount-1)*c.columnSpacing)/c.columnCount),
			"%d columns of %d with spacing %d need %d, more than the %d between the margins of a page %d wide", c.columnCount, c.columnWidth, c.columnSpacing, need, usable, c.pageWidth)
	}
}

func boolAttr(e *Element, name string) (bool, bool) {
	v, ok := e.Attr(name)
	return v == "true", ok
}

// builtinParams are the parameters every dataset has.
var builtinParams = []string{
	"REPORT_PARAMETERS_MAP", "REPORT_CONTEXT", "REPORT_PROPERTIES_MAP", "JASPER_REPORTS_CONTEXT", "JASPER_REPORT",
	"REPORT_CONNECTION", "REPORT_MAX_COUNT", "REPORT_DATA_SOURCE", "REPORT_SCRIPTLET", "REPORT_LOCALE",
	"REPORT_RESOURCE_BUNDLE", "REPORT_TIME_ZONE", "REPORT_FORMAT_FACTORY", "REPORT_CLASS_LOADER",
	"REPORT_URL_HANDLER_FACTORY", "REPORT_FILE_RESOLVER", "REPORT_TEMPLATES", "SORT_FIELDS", "FILTER",
	"REPORT_VIRTUALIZER", "IS_IGNORE_PAGINATION", "HIBERNATE_SESSION", "HIBERNATE_FILTER_COLLECTION",
	"JPA_ENTITY_MANAGER", "JPA_QUERY_HINTS_MAP", "XML_DATA_DOCUMENT", "XML_DATE_PATTERN", "XML_NUMBER_PATTERN",
	"XML_LOCALE", "XML_TIME_ZONE", "MONDRIAN_CONNECTION", "JSON_INPUT_STREAM", "JSON_SOURCE", "JSON_DATE_PATTERN",
	"JSON_NUMBER_PATTERN", "JSON_LOCALE", "JSON_TIME_ZONE", "CSV_SOURCE", "XLSX_SOURCE", "XLS_SOURCE",
}

// builtinVars are the variables every dataset has.
var builtinVars = []string{"PAGE_NUMBER", "MASTER_CURRENT_PAGE", "MASTER_TOTAL_PAGES", "COLUMN_NUMBER", "REPORT_COUNT", "PAGE_COUNT", "COLUMN_COUNT"}

// crosstabVars are the variables every crosstab has, known in its cells
// and in the conditional styles they use.
var crosstabVars = []string{"ROW_COUNT", "COLUMN_COUNT", "IS_EVEN_ROW", "IS_EVEN_COLUMN"}

// declare collects the names the report and its sub-datasets declare.
func (c *checker) declare() {
	c.fields, c.params, c.vars = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range builtinParams {
		c.params[p] = true
	}
	for _, v := range builtinVars {
		c.vars[v] = true
	}
	c.doc.Root.Walk(func(e *Element) bool {
		name, _ := e.Attr("name")
		switch e.Name {
		case "field":
			c.fields[name] = true
		case "parameter", "crosstabParameter":
			c.params[name] = true
		case "variable":
			c.vars[name] = true
		case "scriptlet":
			c.params[name+"_SCRIPTLET"] = true
		case "group":
			c.vars[name+"_COUNT"] = true
		case "crosstab":
			c.hasCrosstab = true
		case "rowGroup", "columnGroup", "measure":
			c.vars[name] = true
			c.crosstabNames = append(c.crosstabNames, name)
		}
		return true
	})
}

// refPattern matches $F{name}, $P{name}, $P!{name} and $V{name}.
var refPattern = regexp.MustCompile(`\$([FPV])!?\{([^}]*)\}`)

// isExpression reports whether e holds an expression (or a query, whose
// $P{} are parameters).
func isExpression(e *Element) bool {
	return strings.HasSuffix(e.Name, "Expression") || e.Name == "queryString"
}

func (c *checker) references(e *Element) {
	if !isExpression(e) || len(e.Children) > 0 {
		return
	}
	text := e.Text()
	if !strings.Contains(text, "$") {
		return
	}
	for _, m := range refPattern.FindAllStringSubmatch(text, -1) {
		kind, name := m[1], m[2]
		var known map[string]bool
		var what, decl string
		switch kind {
		case "F":
			known, what, decl = c.fields, "field", `<field name="%s" class="java.lang.String"/>`
		case "P":
			known, what, decl = c.params, "parameter", `<parameter name="%s" class="java.lang.String"/>`
		default:
			known, what, decl = c.vars, "variable", `<variable name="%s" class="java.lang.Integer" calculation="Count"/>`
		}
		if known[name] || kind == "V" && (c.crosstabTotal(name) || c.crosstabBuiltin(e, name)) || kind == "P" && strings.HasPrefix(name, "net.sf.jasperreports.") {
			continue
		}
		sev := Error
		if inConditionalStyle(e) {
			// a style's condition is evaluated where the style is used,
			// a crosstab cell say, with the names declared there
			sev = Warning
		}
		hint := "declare " + fmt.Sprintf(decl, name) + " in the header"
		if near := nearest(name, known); near != "" {
			hint = "did you mean " + near + "? or " + hint
		}
		c.add(e, sev, "reference", hint, "%s is not a declared %s", m[0], what)
	}
}

func inConditionalStyle(e *Element) bool {
	for p := e.Parent; p != nil; p = p.Parent {
		if p.Name == "conditionalStyle" {
			return true
		}
	}
	return false
}

// crosstabBuiltin reports whether name is a crosstab's built-in variable
// where e may name it: inside a crosstab, or in a conditional style of a
// report with one.
func (c *checker) crosstabBuiltin(e *Element, name string) bool {
	if !slices.Contains(crosstabVars, name) {
		return false
	}
	for p := e.Parent; p != nil; p = p.Parent {
		if p.Name == "crosstab" || p.Name == "conditionalStyle" && c.hasCrosstab {
			return true
		}
	}
	return false
}

// crosstabTotal reports whether name is a crosstab's total variable, a
// measure's name followed by _group or _ALL parts.
func (c *checker) crosstabTotal(name string) bool {
	for _, n := range c.crosstabNames {
		if strings.HasPrefix(name, n+"_") {
			return true
		}
	}
	return false
}

// nearest is the declared name closest to name by case-insensitive edit
// distance, if it is close (at most a third of its length).
func nearest(name string, known map[string]bool) string {
	best, bestD := "", len(name)/3+1
	for k := range known {
		if d := edlib.LevenshteinDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD || d == bestD && best != "" && k < best {
			best, bestD = k, d
		}
	}
	return best
}

func (c *checker) query() {
	r := c.doc.Root
	if r.Child("queryString") != nil {
		return
	}
	if f := r.Child("field"); f != nil {
		c.add(f, Warning, "query", "add a <queryString> before the fields, or give the report a data source when it runs",
			"the report declares fields but no queryString")
	}
}

// sectionHeight is the height of the first band of section name, 0 when
// there is none.
func (c *checker) sectionHeight(name string) int {
	if s := c.doc.Root.Child(name); s != nil {
		if b := s.Child("band"); b != nil {
			return intAttr(b, "height", 0)
		}
	}
	return 0
}

// bands checks each band's height against the page it must fit on with
// the sections printed beside it, as JasperReports does when it compiles.
func (c *checker) bands() {
	if c.ignorePagination {
		return
	}
	ph, ch, cf, pf := c.sectionHeight("pageHeader"), c.sectionHeight("columnHeader"), c.sectionHeight("columnFooter"), c.sectionHeight("pageFooter")
	for _, e := range c.doc.bandElements() {
		h := intAttr(e, "height", 0)
		var with int
		var what string
		switch e.Parent.Name {
		case "title", "summary", "noData", "background", "pageHeader", "pageFooter":
			what = "the margins"
		case "columnHeader":
			with, what = ph, "the page header and the margins"
		case "lastPageFooter":
			with, what = ph+ch+cf, "the page and column headers, the column footer and the margins"
		case "columnFooter":
			with, what = ph+ch+pf, "the page and column headers, the page footer and the margins"
		default: // detail, groupHeader, groupFooter
			with, what = ph+ch+cf+pf, "the page and column headers and footers and the margins"
		}
		if need := c.top + with + h + c.bottom; need > c.pageHeight {
			c.add(e, Error, "band", fmt.Sprintf("make the band at most %d high", c.pageHeight-c.top-c.bottom-with),
				"a %s band %d high with %s needs %d, more than the page height %d", e.Parent.Name, h, what, need, c.pageHeight)
		}
	}
}

// sizes checks that band heights, element geometry and font sizes stay
// within MaxPageSize and MaxFontSize, whatever the page: the band checks
// skip a report that ignores pagination.
func (c *checker) sizes(e *Element) {
	switch {
	case e.Name == "band":
		if h := intAttr(e, "height", 0); h < 0 || h > MaxPageSize {
			c.add(e, Error, "band", fmt.Sprintf("a band is from 0 to %d high", MaxPageSize), "a band %d high is out of range", h)
		}
	case e.Name == "reportElement":
		for _, name := range []string{"x", "y", "width", "height"} {
			v := intAttr(e, name, 0)
			if v > MaxPageSize || v < -MaxPageSize || v < 0 && (name == "width" || name == "height") {
				lo := -MaxPageSize
				if name == "width" || name == "height" {
					lo = 0
				}
				c.add(e, Error, "bounds", fmt.Sprintf("%s is from %d to %d points", name, lo, MaxPageSize), "%s=%d is out of range", name, v)
			}
		}
	}
	for _, a := range e.Attrs {
		if a.Name.Space != "" || !(a.Name.Local == "size" && e.Name == "font" || a.Name.Local == "fontSize" || a.Name.Local == "lineWidth") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(a.Value), 64); err == nil && !(f >= 0 && f <= MaxFontSize) {
			c.add(e, Error, "value", fmt.Sprintf("%s is from 0 to %d", a.Name.Local, MaxFontSize), "%s=%s is out of range", a.Name.Local, a.Value)
		}
	}
}

// bounds checks that report elements lie inside their band (or frame) and
// the page width.
func (c *checker) bounds() {
	usable := c.pageWidth - c.left - c.right
	for _, b := range c.doc.bandElements() {
		bh := intAttr(b, "height", 0)
		var inside func(container *Element, w, h int, inFrame bool)
		inside = func(container *Element, w, h int, inFrame bool) {
			for _, el := range container.Children {
				if el.Name == "elementGroup" {
					inside(el, w, h, inFrame)
					continue
				}
				re := el.Child("reportElement")
				if re == nil {
					continue
				}
				x, y := intAttr(re, "x", 0), intAttr(re, "y", 0)
				ew, eh := intAttr(re, "width", 0), intAttr(re, "height", 0)
				switch {
				case x < 0 || y < 0:
					c.add(re, Warning, "bounds", "x and y are offsets from the band's top left corner: the part above or left of it is cut off", "<%s> at x=%d y=%d lies outside its band", el.Name, x, y)
				case y+eh > h && !inFrame:
					c.add(re, Error, "bounds", fmt.Sprintf("make the band at least %d high, or move the element up", y+eh), "<%s> bottom y+height=%d reaches outside the band, %d high", el.Name, y+eh, h)
				case y+eh > h:
					c.add(re, Warning, "bounds", "the frame cuts it off: make the frame taller", "<%s> bottom y+height=%d reaches outside its frame, %d high", el.Name, y+eh, h)
				case x+ew > w && !inFrame:
					c.add(re, Warning, "bounds", fmt.Sprintf("make it at most %d wide, or move it left", w-x), "<%s> right edge x+width=%d reaches past the page width between the margins, %d", el.Name, x+ew, w)
				case x+ew > w:
					c.add(re, Warning, "bounds", "the frame cuts it off: make the frame wider", "<%s> right edge x+width=%d reaches outside its frame, %d wide", el.Name, x+ew, w)
				}
				if el.Name == "frame" {
					inside(el, ew, eh, true)
				}
			}
		}
		inside(b, usable, bh, false)
	}
}

// order lists, for an element, the children whose order the schema fixes;
// "#element" stands for any report element. Children not listed are not
// checked.
var order = map[string][]string{
	"jasperReport":  {"property", "propertyExpression", "import", "template", "reportFont", "style", "subDataset", "scriptlet", "parameter", "queryString", "field", "sortField", "variable", "filterExpression", "group", "background", "title", "pageHeader", "columnHeader", "detail", "columnFooter", "pageFooter", "lastPageFooter", "summary", "noData"},
	"subDataset":    {"property", "propertyExpression", "scriptlet", "parameter", "queryString", "field", "sortField", "variable", "filterExpression", "group"},
	"group":         {"groupExpression", "groupHeader", "groupFooter"},
	"band":          {"property", "printWhenExpression", "#element", "returnValue"},
	"frame":         {"reportElement", "box", "#element"},
	"staticText":    {"reportElement", "box", "textElement", "text"},
	"textField":     {"reportElement", "box", "textElement", "textFieldExpression", "patternExpression", "anchorNameExpression", "bookmarkLevelExpression", "hyperlinkReferenceExpression", "hyperlinkWhenExpression", "hyperlinkAnchorExpression", "hyperlinkPageExpression", "hyperlinkTooltipExpression", "hyperlinkParameter"},
	"image":         {"reportElement", "box", "graphicElement", "imageExpression", "anchorNameExpression", "bookmarkLevelExpression", "hyperlinkReferenceExpression", "hyperlinkWhenExpression", "hyperlinkAnchorExpression", "hyperlinkPageExpression", "hyperlinkTooltipExpression", "hyperlinkParameter"},
	"line":          {"reportElement", "graphicElement"},
	"rectangle":     {"reportElement", "graphicElement"},
	"ellipse":       {"reportElement", "graphicElement"},
	"break":         {"reportElement"},
	"reportElement": {"property", "propertyExpression", "printWhenExpression", "styleExpression"},
	"textElement":   {"font", "paragraph"},
	"box":           {"pen", "topPen", "leftPen", "bottomPen", "rightPen"},
	"parameter":     {"property", "parameterDescription", "defaultValueExpression"},
	"field":         {"property", "propertyExpression", "fieldDescription"},
	"variable":      {"variableDescription", "variableExpression", "initialValueExpression"},
	"style":         {"pen", "box", "paragraph", "conditionalStyle"},
}

// reportElements are the elements a band or frame holds.
var reportElements = []string{"break", "line", "rectangle", "ellipse", "image", "staticText", "textField", "subreport",
	"pieChart", "pie3DChart", "barChart", "bar3DChart", "xyBarChart", "stackedBarChart", "stackedBar3DChart", "lineChart",
	"xyLineChart", "areaChart", "xyAreaChart", "scatterChart", "bubbleChart", "timeSeriesChart", "highLowChart",
	"candlestickChart", "meterChart", "thermometerChart", "multiAxisChart", "stackedAreaChart", "ganttChart",
	"elementGroup", "crosstab", "frame", "componentElement", "genericElement"}

func (c *checker) order(e *Element) {
	seq, ok := order[e.Name]
	if !ok || e.Name == "style" && e.Parent != nil && e.Parent.Name == "conditionalStyle" {
		return
	}
	last, lastName := -1, ""
	for _, ch := range e.Children {
		name := ch.Name
		if slices.Contains(reportElements, name) {
			name = "#element"
		}
		i := slices.Index(seq, name)
		if i < 0 {
			continue
		}
		if i < last {
			c.add(ch, Error, "order", fmt.Sprintf("in <%s>, <%s> comes before <%s>", e.Name, ch.Name, lastName),
				"<%s> comes after <%s>, which the schema puts after it", ch.Name, lastName)
		}
		if i > last {
			last, lastName = i, ch.Name
		}
	}
	if seq[0] == "reportElement" && e.Child("reportElement") == nil {
		c.add(e, Error, "required", "give it a <reportElement x=… y=… width=… height=…/> as its first child", "<%s> has no reportElement", e.Name)
	}
}

// required are the attributes the schema requires, by element.
var required = map[string][]string{
	"jasperReport": {"name"}, "field": {"name"}, "parameter": {"name"}, "variable": {"name"}, "group": {"name"},
	"subDataset": {"name"}, "scriptlet": {"name", "class"}, "sortField": {"name"}, "import": {"value"},
	"property": {"name"}, "reportElement": {"x", "y", "width", "height"}, "datasetRun": {"subDataset"},
	"subreportParameter": {"name"}, "datasetParameter": {"name"}, "crosstabParameter": {"name"},
	"measure": {"name"}, "rowGroup": {"name", "width"}, "columnGroup": {"name", "height"},
}

// enums are the values the schema allows for an attribute, keyed by
// attribute name, or element/attribute where elements differ.
var enums = map[string][]string{
	"mode":                      {"Opaque", "Transparent"},
	"textAlignment":             {"Left", "Center", "Right", "Justified"},
	"verticalAlignment":         {"Top", "Middle", "Bottom", "Justified"},
	"hTextAlign":                {"Left", "Center", "Right", "Justified"},
	"vTextAlign":                {"Top", "Middle", "Bottom", "Justified"},
	"hImageAlign":               {"Left", "Center", "Right"},
	"vImageAlign":               {"Top", "Middle", "Bottom"},
	"vAlign":                    {"Top", "Middle", "Bottom"},
	"positionType":              {"Float", "FixRelativeToTop", "FixRelativeToBottom"},
	"reportElement/stretchType": {"NoStretch", "RelativeToTallestObject", "RelativeToBandHeight", "ElementGroupBottom", "ElementGroupHeight", "ContainerBottom", "ContainerHeight"},
	"splitType":                 {"Stretch", "Prevent", "Immediate"},
	"scaleImage":                {"Clip", "FillFrame", "RetainShape", "RealHeight", "RealSize"},
	"lineStyle":                 {"Solid", "Dashed", "Dotted", "Double"},
	"rotation":                  {"None", "Left", "Right", "UpsideDown"},
	"whenNoDataType":            {"NoPages", "BlankPage", "AllSectionsNoDetail", "NoDataSection"},
	"jasperReport/orientation":  {"Portrait", "Landscape"},
	"printOrder":                {"Vertical", "Horizontal"},
	"columnDirection":           {"LTR", "RTL"},
	"whenResourceMissingType":   {"Null", "Empty", "Key", "Error"},
	"textAdjust":                {"CutText", "StretchHeight", "ScaleFont"},
	"footerPosition":            {"Normal", "StackAtBottom", "ForceAtBottom", "CollateAtBottom"},
	"variable/calculation":      {"Nothing", "Count", "DistinctCount", "Sum", "Average", "Lowest", "Highest", "StandardDeviation", "Variance", "System", "First"},
	"variable/resetType":        {"None", "Report", "Page", "Column", "Group", "Master"},
	"incrementType":             {"None", "Report", "Page", "Column", "Group"},
	"break/type":                {"Page", "Column"},
	"onErrorType":               {"Error", "Blank", "Icon"},
	"textField/evaluationTime":  {"Now", "Report", "Page", "Column", "Group", "Band", "Auto", "Master"},
	"image/evaluationTime":      {"Now", "Report", "Page", "Column", "Group", "Band", "Auto", "Master"},
	"sectionType":               {"Band", "Part"},
}

// intAttrs are attributes whose value is a whole number.
var intAttrs = []string{"x", "y", "width", "height", "pageWidth", "pageHeight", "columnWidth", "columnCount", "columnSpacing", "leftMargin", "rightMargin", "topMargin", "bottomMargin"}

// colorPattern matches a colour: #RRGGBB (or #AARRGGBB, #RGB) or a name.
var colorPattern = regexp.MustCompile(`^(#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})|[A-Za-z]+)$`)

func (c *checker) attributes(e *Element) {
	for _, name := range required[e.Name] {
		if _, ok := e.Attr(name); !ok {
			c.add(e, Error, "required", fmt.Sprintf(`add %s="…" to <%s>`, name, e.Name), "<%s> lacks the required attribute %s", e.Name, name)
		}
	}
	for _, a := range e.Attrs {
		if a.Name.Space != "" {
			continue // xmlns:…, xsi:… and other namespaces' attributes
		}
		name, v := a.Name.Local, a.Value
		allowed, ok := enums[e.Name+"/"+name]
		if !ok {
			allowed, ok = enums[name]
		}
		switch {
		case ok && !slices.Contains(allowed, v):
			c.add(e, Error, "value", name+" is one of "+strings.Join(allowed, ", "), "%s=%q is not an allowed value", name, v)
		case isBoolName(name) && v != "true" && v != "false":
			c.add(e, Error, "value", name+` is "true" or "false"`, "%s=%q is not a boolean", name, v)
		case slices.Contains(intAttrs, name) && isGeometry(e) && !isInt(v):
			c.add(e, Error, "value", name+" is a whole number of points", "%s=%q is not a whole number", name, v)
		case (name == "forecolor" || name == "backcolor" || name == "lineColor" || name == "color") && !colorPattern.MatchString(v):
			c.add(e, Error, "value", name+" is a colour like #336699", "%s=%q is not a colour", name, v)
		case (name == "size" && e.Name == "font" || name == "fontSize" || name == "lineWidth") && !isNumber(v):
			c.add(e, Error, "value", name+" is a number", "%s=%q is not a number", name, v)
		}
	}
	if e.Name == "band" {
		if v, ok := e.Attr("height"); ok && !isInt(v) {
			c.add(e, Error, "value", "height is a whole number of points", "height=%q is not a whole number", v)
		}
	}
}

// isGeometry reports whether e's whole-number attributes are page or
// element geometry.
func isGeometry(e *Element) bool { return e.Name == "reportElement" || e.Name == "jasperReport" }

// isBoolName reports whether an attribute is a switch by its name: isBold,
// isStartNewPage, keepTogether…
func isBoolName(name string) bool {
	if len(name) > 2 && strings.HasPrefix(name, "is") && name[2] >= 'A' && name[2] <= 'Z' {
		return true
	}
	return name == "keepTogether" || name == "preventOrphanFooter" || name == "runToBottom"
}

func isInt(v string) bool {
	_, err := strconv.Atoi(strings.TrimSpace(v))
	return err == nil
}

func isNumber(v string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return err == nil
}
