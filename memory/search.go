package memory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loomkit/loom/internal/bm25"
)

// analyzer tokenises item texts and queries: words, and character
// bigrams for Chinese.
var analyzer = bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 2, HanOnly: true}

// indexText is the text a query searches in value: "field: value" lines
// of its leaves, of the fields named (dotted paths) or of the whole value.
func indexText(value any, fields []string) string {
	var b strings.Builder
	if fields == nil {
		leaves(&b, "", value)
	}
	for _, f := range fields {
		if v, ok := lookup(value, f); ok {
			leaves(&b, f, v)
		}
	}
	s := b.String()
	if len(s) > maxIndexText {
		s = strings.ToValidUTF8(s[:maxIndexText], "")
	}
	return strings.TrimSpace(s)
}

func leaves(b *strings.Builder, path string, v any) {
	if b.Len() > maxIndexText {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			leaves(b, k, v[k])
		}
	case []any:
		for _, x := range v {
			leaves(b, path, x)
		}
	case nil:
	default:
		if path != "" {
			b.WriteString(path)
			b.WriteString(": ")
		}
		fmt.Fprint(b, v)
		b.WriteByte('\n')
	}
}

// lookup follows a dotted path into a decoded JSON value.
func lookup(v any, path string) (any, bool) {
	for part := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// condition is one field of a filter: the field's value compared with
// want by op ($eq, $ne, $gt, $gte, $lt, $lte).
type condition struct {
	field, op string
	want      any
}

type filter []condition

var operators = []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}

func parseFilter(f map[string]json.RawMessage) (filter, error) {
	if len(f) > maxFilter {
		return nil, invalid("filter names %d fields; at most %d", len(f), maxFilter)
	}
	var out filter
	for _, field := range sortedKeys(f) {
		if field == "" || len(field) > maxLabel || !printable(field) {
			return nil, invalid("filter field %q: want a dotted path of field names", field)
		}
		raw := bytes.TrimSpace(f[field])
		var ops map[string]any
		if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &ops) == nil && len(ops) > 0 && allOperators(ops) {
			for _, op := range sortedKeys(ops) {
				out = append(out, condition{field, op, ops[op]})
			}
			continue
		}
		var want any
		if err := json.Unmarshal(raw, &want); err != nil {
			return nil, invalid("filter field %q: its value is not JSON", field)
		}
		out = append(out, condition{field, "$eq", want})
	}
	return out, nil
}

func allOperators(m map[string]any) bool {
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	for k := range m {
		if !slices.Contains(operators, k) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// match reports whether the JSON object value meets every condition.
func (f filter) match(value string) bool {
	var v any
	if json.Unmarshal([]byte(value), &v) != nil {
		return false
	}
	for _, c := range f {
		got, ok := lookup(v, c.field)
		if !ok {
			if c.op == "$ne" {
				continue
			}
			return false
		}
		if !c.holds(got) {
			return false
		}
	}
	return true
}

func (c condition) holds(got any) bool {
	switch c.op {
	case "$eq":
		return equal(got, c.want)
	case "$ne":
		return !equal(got, c.want)
	}
	o, ok := order(got, c.want)
	if !ok {
		return false
	}
	switch c.op {
	case "$gt":
		return o > 0
	case "$gte":
		return o >= 0
	case "$lt":
		return o < 0
	default: // $lte
		return o <= 0
	}
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a) // decoded JSON marshals with sorted keys
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// order compares two numbers or two strings.
func order(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	}
	return 0, false
}

// rank orders rows by how well they match query: the cosine of their
// embedding with qvec when there is one, else BM25 over their text
// divided by the query's score against itself. Rows with no text (put
// with an empty index), and without an embedder rows that share no term
// with the query, are left out.
func rank(rows []row, query string, qvec []float32) ([]row, []float64) {
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	if qvec != nil {
		for i, r := range rows {
			if r.body != "" && len(r.vec) > 0 {
				hits = append(hits, hit{i, cosine(qvec, unpackVec(r.vec))})
			}
		}
	} else {
		docs := make([][]uint64, len(rows))
		for i, r := range rows {
			docs[i] = analyzer.Text(r.body)
		}
		ix := bm25.New(docs, bm25.Params{HashBits: 16}) // 65,536 buckets: enough for one search's few thousand items
		found, self := ix.Search(analyzer.Text(query), 0)
		for _, h := range found {
			s := h.Score
			if self > 0 {
				s = min(1, s/self)
			}
			hits = append(hits, hit{h.Doc, round(s)})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	out, scores := make([]row, len(hits)), make([]float64, len(hits))
	for j, h := range hits {
		out[j], scores[j] = rows[h.i], h.score
	}
	return out, scores
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0 // embedded by another model
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return round(dot / math.Sqrt(na*nb))
}

// round keeps six decimals, so scores read the same on every platform.
func round(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 6, 64), 64)
	return v
}
