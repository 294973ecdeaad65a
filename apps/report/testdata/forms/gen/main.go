// Command gen writes the forms corpus: for each form an HTML page and a
// truth file (title, labels, table headers, row count, the data values a
// template must not bake in), and for some of them an XLSX workbook and a
// DOCX document; the pages link the style sheet form.css beside them.
// render.sh draws the HTML pages as pictures and PDFs.
//
//	go run ./apps/report/testdata/forms/gen apps/report/testdata/forms
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/xuri/excelize/v2"
)

type form struct {
	Name    string
	Company string
	Title   string
	Colon   string
	Pairs   [][2]string // label, value; two a row
	Headers []string
	Rows    [][]string
	Total   [2]string // label, value
	Signs   []string  // labels of the lines signed below
	XLSX    bool
	DOCX    bool
}

// truth is what a template made from the form must keep.
type truth struct {
	Title   string   `json:"title"`
	Labels  []string `json:"labels"`
	Headers []string `json:"headers"`
	Rows    int      `json:"rows"`
	Values  []string `json:"values"`
}

var forms = []form{
	{
		Name: "xsck", Title: "销售出库单", Colon: "：",
		Pairs:   [][2]string{{"客户名称", "华东五金有限公司"}, {"单号", "XS20240518"}, {"日期", "2024-05-18"}, {"联系电话", "021-55512345"}},
		Headers: []string{"序号", "商品编码", "商品名称", "规格", "数量", "金额"},
		Rows:    [][]string{{"1", "SP-0031", "不锈钢螺栓", "M8×40", "200", "360.00"}, {"2", "SP-0107", "弹簧垫圈", "Φ8", "500", "75.00"}, {"3", "SP-0220", "六角螺母", "M8", "300", "96.00"}},
		Total:   [2]string{"合计", "531.00"}, Signs: []string{"经手人", "审核人", "备注"}, XLSX: true, DOCX: true,
	},
	{
		Name: "invoice", Company: "Northwind Trading Ltd.", Title: "INVOICE", Colon: ":",
		Pairs:   [][2]string{{"Bill To", "Acme Robotics Inc."}, {"Invoice No", "INV-30417"}, {"Invoice Date", "March 15, 2024"}, {"Due Date", "April 14, 2024"}},
		Headers: []string{"Item", "Description", "Quantity", "Unit Price", "Amount"},
		Rows:    [][]string{{"A-100", "Servo motor", "4", "125.00", "500.00"}, {"B-220", "Controller board", "2", "310.00", "620.00"}, {"C-015", "Cable harness", "10", "12.50", "125.00"}},
		Total:   [2]string{"Total", "1245.00"}, Signs: []string{"Authorized Signature"}, XLSX: true, DOCX: true,
	},
	{
		Name: "leave", Company: "上海启明科技有限公司", Title: "请假申请单", Colon: "：",
		Pairs:   [][2]string{{"姓名", "王晓明"}, {"部门", "研发中心"}, {"职位", "软件工程师"}, {"申请日期", "2024-07-02"}},
		Headers: []string{"请假类型", "开始时间", "结束时间", "天数", "事由"},
		Rows:    [][]string{{"年假", "2024-07-08", "2024-07-10", "3", "探亲"}, {"事假", "2024-07-15", "2024-07-15", "1", "搬家"}},
		Total:   [2]string{"合计天数", "4"}, Signs: []string{"部门负责人", "人事部"},
	},
	{
		Name: "expense", Title: "Expense Claim Form", Colon: ":",
		Pairs:   [][2]string{{"Employee", "Laura Chen"}, {"Department", "Marketing"}, {"Employee ID", "E-20931"}, {"Period", "June 2024"}},
		Headers: []string{"Date", "Category", "Description", "Amount"},
		Rows:    [][]string{{"2024-06-03", "Travel", "Taxi to airport", "46.20"}, {"2024-06-04", "Lodging", "Hotel Berlin", "289.00"}, {"2024-06-05", "Meals", "Client dinner", "132.50"}, {"2024-06-06", "Travel", "Train ticket", "78.90"}},
		Total:   [2]string{"Total Claimed", "546.60"}, Signs: []string{"Employee Signature", "Approved By"}, XLSX: true,
	},
	{
		Name: "inspect", Title: "质量检验单", Colon: ":",
		Pairs:   [][2]string{{"产品名称", "齿轮箱壳体"}, {"批次号", "PC-240611"}, {"检验员", "李建国"}, {"检验日期", "2024-06-11"}},
		Headers: []string{"检验项目", "标准要求", "实测值", "结论"},
		Rows:    [][]string{{"外径", "120±0.05", "120.02", "合格"}, {"壁厚", "8±0.1", "8.04", "合格"}, {"硬度", "HB180-220", "196", "合格"}},
		Total:   [2]string{"检验结论", "合格"}, Signs: []string{"质检主管", "日期"},
	},
	{
		Name: "po", Company: "Bluefield Manufacturing Co.", Title: "PURCHASE ORDER", Colon: ":",
		Pairs:   [][2]string{{"Vendor", "Pacific Steel Supply"}, {"PO Number", "PO-88214"}, {"Order Date", "2024-02-20"}, {"Ship To", "Plant 3, Dock B"}},
		Headers: []string{"Line", "Part Number", "Description", "Qty", "Unit Cost", "Total"},
		Rows:    [][]string{{"1", "ST-4410", "Steel plate 4mm", "25", "38.00", "950.00"}, {"2", "ST-2205", "Angle bar 50x50", "40", "14.75", "590.00"}},
		Total:   [2]string{"Grand Total", "1540.00"}, Signs: []string{"Buyer", "Approved"},
	},
	{
		Name: "bxd", Title: "费用报销单", Colon: "：",
		Pairs:   [][2]string{{"报销人", "赵丽华"}, {"所属部门", "财务部"}, {"报销日期", "2024-08-09"}, {"附件张数", "5张"}},
		Headers: []string{"日期", "费用类别", "摘要", "金额"},
		Rows:    [][]string{{"2024-08-01", "交通费", "出差高铁", "553.00"}, {"2024-08-02", "住宿费", "广州酒店", "680.00"}, {"2024-08-03", "餐费", "客户招待", "420.00"}},
		Total:   [2]string{"合计金额", "1653.00"}, Signs: []string{"部门审批", "财务审核", "出纳"}, XLSX: true,
	},
	{
		Name: "rkd", Company: "宁波远航物流有限公司", Title: "入库单", Colon: "：",
		Pairs:   [][2]string{{"供应商", "杭州明达纸业"}, {"入库单号", "RK-0915"}, {"仓库", "二号仓"}, {"入库日期", "2024-09-15"}},
		Headers: []string{"物料编码", "物料名称", "单位", "数量", "备注"},
		Rows:    [][]string{{"WL-1001", "瓦楞纸箱", "个", "1200", "大号"}, {"WL-1002", "封箱胶带", "卷", "300", "透明"}},
		Total:   [2]string{"合计数量", "1500"}, Signs: []string{"仓管员", "送货人"}, DOCX: true,
	},
}

const page = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="form.css"></head><body><div class="page">
%s</div></body></html>
`

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for _, f := range forms {
		t := truth{Title: f.Title, Headers: f.Headers, Rows: len(f.Rows)}
		for _, p := range f.Pairs {
			t.Labels = append(t.Labels, p[0])
			t.Values = append(t.Values, p[1])
		}
		t.Labels = append(t.Labels, f.Total[0])
		t.Labels = append(t.Labels, f.Signs...)
		for _, r := range f.Rows {
			t.Values = append(t.Values, r...)
		}
		t.Values = append(t.Values, f.Total[1])
		b, _ := json.MarshalIndent(t, "", "  ")
		must(os.WriteFile(filepath.Join(dir, f.Name+".json"), append(b, '\n'), 0o644))
		must(os.WriteFile(filepath.Join(dir, f.Name+".html"), []byte(fmt.Sprintf(page, body(f))), 0o644))
		if f.XLSX {
			must(os.WriteFile(filepath.Join(dir, f.Name+".xlsx"), workbook(f), 0o644))
		}
		if f.DOCX {
			must(os.WriteFile(filepath.Join(dir, f.Name+".docx"), document(f), 0o644))
		}
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func esc(s string) string { return html.EscapeString(s) }

func body(f form) string {
	var b strings.Builder
	if f.Company != "" {
		fmt.Fprintf(&b, "<div class=\"company\">%s</div>\n", esc(f.Company))
	}
	fmt.Fprintf(&b, "<h1>%s</h1>\n<table class=\"info\">\n", esc(f.Title))
	for i := 0; i < len(f.Pairs); i += 2 {
		b.WriteString("<tr>")
		for _, p := range f.Pairs[i:min(i+2, len(f.Pairs))] {
			fmt.Fprintf(&b, "<td>%s%s</td><td>%s</td>", esc(p[0]), f.Colon, esc(p[1]))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<table class=\"grid\">\n<tr>")
	for _, h := range f.Headers {
		fmt.Fprintf(&b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>\n")
	for _, r := range f.Rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(&b, "<td>%s</td>", esc(c))
		}
		b.WriteString("</tr>\n")
	}
	fmt.Fprintf(&b, "</table>\n<div class=\"total\">%s%s%s</div>\n<div class=\"signs\">", esc(f.Total[0]), f.Colon, esc(f.Total[1]))
	for _, s := range f.Signs {
		fmt.Fprintf(&b, "<span>%s%s____________</span>", esc(s), f.Colon)
	}
	b.WriteString("</div>\n")
	return b.String()
}

// workbook is the form as a sheet: a merged, centred, bold title, the
// pairs in label/value cells, a bordered table, the total and the signs.
func workbook(f form) []byte {
	x := excelize.NewFile()
	defer x.Close()
	sh := x.GetSheetName(0)
	n := len(f.Headers)
	last, _ := excelize.ColumnNumberToName(n)
	set := func(col, row int, v string) {
		ref, _ := excelize.CoordinatesToCellName(col, row)
		must(x.SetCellValue(sh, ref, v))
	}
	row := 1
	if f.Company != "" {
		set(1, row, f.Company)
		must(x.MergeCell(sh, "A1", last+"1"))
		row++
	}
	set(1, row, f.Title)
	must(x.MergeCell(sh, fmt.Sprintf("A%d", row), fmt.Sprintf("%s%d", last, row)))
	title, _ := x.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true, Size: 18}, Alignment: &excelize.Alignment{Horizontal: "center"}})
	must(x.SetCellStyle(sh, fmt.Sprintf("A%d", row), fmt.Sprintf("A%d", row), title))
	row += 2
	for i, p := range f.Pairs {
		col := 1 + (i%2)*2
		if n < 4 {
			col = 1
		}
		set(col, row, p[0]+f.Colon)
		set(col+1, row, p[1])
		if i%2 == 1 || n < 4 {
			row++
		}
	}
	row++
	border := []excelize.Border{{Type: "left", Color: "000000", Style: 1}, {Type: "right", Color: "000000", Style: 1}, {Type: "top", Color: "000000", Style: 1}, {Type: "bottom", Color: "000000", Style: 1}}
	head, _ := x.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}, Border: border, Alignment: &excelize.Alignment{Horizontal: "center"}})
	cell, _ := x.NewStyle(&excelize.Style{Border: border})
	for c, h := range f.Headers {
		set(c+1, row, h)
	}
	must(x.SetCellStyle(sh, fmt.Sprintf("A%d", row), fmt.Sprintf("%s%d", last, row), head))
	row++
	for _, r := range f.Rows {
		for c, v := range r {
			set(c+1, row, v)
		}
		must(x.SetCellStyle(sh, fmt.Sprintf("A%d", row), fmt.Sprintf("%s%d", last, row), cell))
		row++
	}
	row++
	set(n-1, row, f.Total[0]+f.Colon)
	set(n, row, f.Total[1])
	row += 2
	for i, s := range f.Signs {
		set(1+i*2, row, s+f.Colon)
	}
	must(x.SetColWidth(sh, "A", last, 16))
	var buf bytes.Buffer
	_, err := x.WriteTo(&buf)
	must(err)
	return buf.Bytes()
}

// document is the form as a minimal DOCX: the company and title as
// centred paragraphs, the pairs as paragraphs, the table with borders,
// the total and the signs as paragraphs.
func document(f form) []byte {
	var d strings.Builder
	para := func(text string, centre, bold bool, size int) {
		d.WriteString("<w:p><w:pPr>")
		if centre {
			d.WriteString(`<w:jc w:val="center"/>`)
		}
		d.WriteString("</w:pPr><w:r><w:rPr>")
		if bold {
			d.WriteString("<w:b/>")
		}
		if size > 0 {
			fmt.Fprintf(&d, `<w:sz w:val="%d"/>`, size*2)
		}
		fmt.Fprintf(&d, `</w:rPr><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, esc(text))
	}
	if f.Company != "" {
		para(f.Company, true, false, 12)
	}
	para(f.Title, true, true, 18)
	for i := 0; i < len(f.Pairs); i += 2 {
		var parts []string
		for _, p := range f.Pairs[i:min(i+2, len(f.Pairs))] {
			parts = append(parts, p[0]+f.Colon+p[1])
		}
		para(strings.Join(parts, "\t\t"), false, false, 0)
	}
	d.WriteString(`<w:tbl><w:tblPr><w:tblBorders>`)
	for _, side := range []string{"top", "left", "bottom", "right", "insideH", "insideV"} {
		fmt.Fprintf(&d, `<w:%s w:val="single" w:sz="4"/>`, side)
	}
	d.WriteString(`</w:tblBorders></w:tblPr>`)
	row := func(cells []string) {
		d.WriteString("<w:tr>")
		for _, c := range cells {
			fmt.Fprintf(&d, `<w:tc><w:tcPr><w:tcW w:w="%d" w:type="dxa"/></w:tcPr><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:tc>`, 9000/len(cells), esc(c))
		}
		d.WriteString("</w:tr>")
	}
	row(f.Headers)
	for _, r := range f.Rows {
		row(r)
	}
	d.WriteString("</w:tbl>")
	para(f.Total[0]+f.Colon+f.Total[1], false, false, 0)
	var signs []string
	for _, s := range f.Signs {
		signs = append(signs, s+f.Colon+"__________")
	}
	para(strings.Join(signs, "\t\t"), false, false, 0)
	files := []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + d.String() + `<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440"/></w:sectPr></w:body></w:document>`},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := z.Create(f.name)
		must(err)
		_, err = w.Write([]byte(f.body))
		must(err)
	}
	must(z.Close())
	return buf.Bytes()
}
