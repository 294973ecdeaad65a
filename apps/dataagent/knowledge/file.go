package knowledge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is the knowledge of one data source as YAML (or JSON) files hold
// it:
//
//	source: shop
//	terms:
//	  - term: 客单价
//	    synonyms: [average order value, AOV]
//	    formula: sum(payments.amount) / count(DISTINCT orders.id)
//	documents:
//	  - title: Order statuses
//	    text: An order is pending until it is paid …
//	examples:
//	  - question: 每个城市有多少客户？
//	    sql: SELECT city, count(*) FROM customers GROUP BY city
//	semantic:
//	  - table: orders
//	    column: status
//	    name: 订单状态
//	    values: {paid: 已支付, cancelled: 已取消}
//
// Each list holds entries of its kind, without id or source (see Entry).
type File struct {
	Source    string  `json:"source" yaml:"source"`
	Terms     []Entry `json:"terms,omitempty" yaml:"terms,omitempty"`
	Documents []Entry `json:"documents,omitempty" yaml:"documents,omitempty"`
	Examples  []Entry `json:"examples,omitempty" yaml:"examples,omitempty"`
	Semantic  []Entry `json:"semantic,omitempty" yaml:"semantic,omitempty"`
}

// maxFile bounds a file Parse reads.
const maxFile = 4 << 20

// Parse reads a knowledge file, YAML or JSON. A field that is not one of
// File's or Entry's is an error naming it and its line, and so is
// anything after the first document. The entries are not validated until
// Entries, Import or Seed.
func Parse(b []byte) (*File, error) {
	if len(b) > maxFile {
		return nil, fmt.Errorf("%w: the file is %d bytes; at most %d", ErrInvalid, len(b), maxFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalid, yamlMessage(err))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: the file holds more than one YAML document; put one source's knowledge in a file", ErrInvalid)
	}
	return &f, nil
}

// yamlWords puts the YAML decoder's errors in a reader's words, without
// Go's type names.
var yamlWords = strings.NewReplacer(
	"not found in type knowledge.Entry", "is not a field of an entry (term, formula, title, text, question, sql, table, column, name, description, synonyms, values)",
	"not found in type knowledge.File", "is not a section of a knowledge file (source, terms, documents, examples, semantic)",
	"cannot unmarshal", "cannot read",
	"into []knowledge.Entry", "as a list of entries",
	"into knowledge.Entry", "as an entry",
	"into knowledge.File", "as a knowledge file",
	"into map[string]string", "as a mapping of values to meanings",
	"into []string", "as a list of strings",
	"into string", "as text",
	"!!map", "a mapping",
	"!!seq", "a list",
	"!!str", "text",
	"!!int", "a number",
	"!!float", "a number",
	"!!bool", "true or false",
)

// yamlMessage is the YAML decoder's error in a reader's words: "line 4:
// field sq not found in type knowledge.Entry" becomes "line 4: field sq is
// not a field of an entry (…)".
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return yamlWords.Replace(msg)
}

// Entries returns f's entries with their kind and source set, validated
// and normalized (f is left as it is):
// an error wraps ErrInvalid and names each wrong entry by its section,
// position and label ("terms[2] term \"客单价\": description or formula
// is required"), and two entries with the same natural key.
func (f *File) Entries() ([]Entry, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: no file", ErrInvalid)
	}
	source := strings.TrimSpace(f.Source)
	if err := checkSource(source); err != nil {
		if source == "" {
			return nil, fmt.Errorf("%w: the file names no source (source: the data source's name)", ErrInvalid)
		}
		return nil, err
	}
	var out []Entry
	var problems []string
	first := map[string]string{} // kind + key → where
	for _, sec := range []struct {
		kind    Kind
		entries []Entry
	}{{KindTerm, f.Terms}, {KindDocument, f.Documents}, {KindExample, f.Examples}, {KindSemantic, f.Semantic}} {
		for i, e := range sec.entries {
			e.Kind, e.Source = sec.kind, source
			where := fmt.Sprintf("%s[%d]", sec.kind.plural(), i+1)
			if err := e.Validate(); err != nil {
				problems = append(problems, where+" "+strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
				continue
			}
			k := string(e.Kind) + "\x00" + e.Key()
			if w, ok := first[k]; ok {
				problems = append(problems, fmt.Sprintf("%s %s: the same as %s", where, e.Label(), w))
				continue
			}
			first[k] = where
			out = append(out, e)
		}
	}
	if len(problems) > 0 {
		const shown = 20
		if n := len(problems); n > shown {
			problems = append(problems[:shown], fmt.Sprintf("and %d more", n-shown))
		}
		return nil, fmt.Errorf("%w in %s: %s", ErrInvalid, source, strings.Join(problems, "\n"))
	}
	return out, nil
}

// Marshal writes f as YAML, which Parse reads back.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("write knowledge file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write knowledge file: %w", err)
	}
	return b.Bytes(), nil
}
