package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// ReadRows reads data rows from a file: a JSON array of objects (.json)
// or CSV with a header line (any other name).
func ReadRows(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var rows []Row
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&rows); err != nil {
			return nil, fmt.Errorf("read rows %s: a JSON array of objects: %w", path, err)
		}
		for _, r := range rows {
			for k, v := range r {
				if n, ok := v.(json.Number); ok {
					f, _ := n.Float64()
					r[k] = f
				}
			}
		}
		return rows, nil
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read rows %s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	rows := make([]Row, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		r := Row{}
		for i, h := range recs[0] {
			if i < len(rec) {
				if f, err := strconv.ParseFloat(rec[i], 64); err == nil {
					r[h] = f
				} else {
					r[h] = rec[i]
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// SampleRows makes n rows of sample values for the report's fields by
// their class: numbers count up, dates are fixed, text is the field's
// name and the row number.
func SampleRows(doc *jrxml.Document, n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{}
		for _, f := range doc.Root.Children {
			if f.Name != "field" {
				continue
			}
			name, _ := f.Attr("name")
			class, _ := f.Attr("class")
			switch {
			case strings.HasSuffix(class, "Integer") || strings.HasSuffix(class, "Long") || strings.HasSuffix(class, "Short"):
				rows[i][name] = float64(i + 1)
			case strings.HasSuffix(class, "Double") || strings.HasSuffix(class, "Float") || strings.HasSuffix(class, "BigDecimal"):
				rows[i][name] = float64(i+1) * 10.5
			case strings.HasSuffix(class, "Boolean"):
				rows[i][name] = i%2 == 0
			case strings.Contains(class, "Date") || strings.Contains(class, "Time"):
				rows[i][name] = fmt.Sprintf("2024-01-%02d", i%28+1)
			default:
				rows[i][name] = fmt.Sprintf("%s %d", name, i/3+1)
			}
		}
	}
	return rows
}
