// Package dataset reads labelled intent data sets into intent.Examples:
// CLINC150 (data_full.json), SMP2019-ECDT, BANKING77 and plain CSV.
package dataset

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/loomkit/loom/intent"
)

// Format names a data set layout.
type Format string

// The formats Load reads.
const (
	// CLINC150 is clinc/oos-eval's data_full.json: an object whose lists
	// train, val, test, oos_train, oos_val and oos_test hold [text, intent]
	// pairs; any may be absent. Out-of-scope items keep the label "oos".
	CLINC150 Format = "clinc150"
	// SMP2019 is SMP2019-ECDT's list of {text, domain, intent}; the label
	// is domain.intent.
	SMP2019 Format = "smp2019"
	// BANKING77 is a CSV with the header text,category.
	BANKING77 Format = "banking77"
	// CSV is any CSV whose header names a text column (text, utterance,
	// sentence, query) and a label column (intent, label, category,
	// domain); without such a header, text and label are the first two
	// columns.
	CSV Format = "csv"
)

// Set is a data set's splits. Train holds everything for the formats that
// have no splits.
type Set struct {
	Format Format
	Train  []intent.Example
	Val    []intent.Example
	Test   []intent.Example
}

// ErrFormat is wrapped by the errors for data that is not in the format.
var ErrFormat = errors.New("dataset: unknown or malformed format")

// Load reads the file at path in format f; an empty f detects it.
func Load(path string, f Format) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load data set: %w", err)
	}
	if f == "" {
		if f, err = Detect(b); err != nil {
			return nil, fmt.Errorf("load data set %s: %w", path, err)
		}
	}
	s, err := Parse(b, f)
	if err != nil {
		return nil, fmt.Errorf("load data set %s: %w", path, err)
	}
	return s, nil
}

// Detect tells the format of a data set from its content: a JSON object
// is CLINC150, a JSON list SMP2019, a CSV with the header text,category
// BANKING77, any other CSV CSV.
func Detect(b []byte) (Format, error) {
	t := bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
	switch {
	case len(t) == 0:
		return "", fmt.Errorf("%w: empty", ErrFormat)
	case t[0] == '{':
		return CLINC150, nil
	case t[0] == '[':
		return SMP2019, nil
	}
	first, _, _ := bytes.Cut(t, []byte("\n"))
	if strings.TrimSpace(strings.ToLower(string(first))) == "text,category" {
		return BANKING77, nil
	}
	if bytes.ContainsRune(first, ',') {
		return CSV, nil
	}
	return "", fmt.Errorf("%w: neither JSON nor CSV", ErrFormat)
}

// Parse reads a data set in format f from b.
func Parse(b []byte, f Format) (*Set, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	s := &Set{Format: f}
	switch f {
	case CLINC150:
		var raw map[string][][]string
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%w: clinc150: %v", ErrFormat, err)
		}
		for _, p := range []struct {
			dst  *[]intent.Example
			keys []string
		}{{&s.Train, []string{"train", "oos_train"}}, {&s.Val, []string{"val", "oos_val"}}, {&s.Test, []string{"test", "oos_test"}}} {
			for _, k := range p.keys {
				for i, pair := range raw[k] {
					if len(pair) != 2 {
						return nil, fmt.Errorf("%w: clinc150: %s[%d] is not [text, intent]", ErrFormat, k, i)
					}
					*p.dst = append(*p.dst, intent.Example{Text: pair[0], Intent: pair[1]})
				}
			}
		}
	case SMP2019:
		var raw []struct{ Text, Domain, Intent string }
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%w: smp2019: %v", ErrFormat, err)
		}
		for i, r := range raw {
			if r.Text == "" || r.Domain == "" {
				return nil, fmt.Errorf("%w: smp2019: item %d has no text or no domain", ErrFormat, i)
			}
			s.Train = append(s.Train, intent.Example{Text: r.Text, Intent: r.Domain + "." + r.Intent})
		}
	case BANKING77, CSV:
		ex, err := parseCSV(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, f, err)
		}
		s.Train = ex
	default:
		return nil, fmt.Errorf("%w: %q", ErrFormat, f)
	}
	if len(s.Train)+len(s.Val)+len(s.Test) == 0 {
		return nil, fmt.Errorf("%w: %s: no examples", ErrFormat, f)
	}
	return s, nil
}

func parseCSV(b []byte) ([]intent.Example, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, err
	}
	col := func(names ...string) int {
		return slices.IndexFunc(header, func(h string) bool {
			return slices.Contains(names, strings.ToLower(strings.TrimSpace(h)))
		})
	}
	text, label := col("text", "utterance", "sentence", "query"), col("intent", "label", "category", "domain")
	var out []intent.Example
	if text < 0 || label < 0 {
		text, label = 0, 1 // no header: the first row is data
		if len(header) >= 2 {
			out = append(out, intent.Example{Text: header[0], Intent: header[1]})
		}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) <= max(text, label) {
			line, _ := r.FieldPos(0)
			return nil, fmt.Errorf("line %d: %d fields", line, len(rec))
		}
		out = append(out, intent.Example{Text: rec[text], Intent: rec[label]})
	}
	return out, nil
}
