package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/internal/testenv"
)

// formTruth is a corpus form's truth file: what a template made from it
// must keep, and the values it must not bake in.
type formTruth struct {
	Title   string   `json:"title"`
	Labels  []string `json:"labels"`
	Headers []string `json:"headers"`
	Rows    int      `json:"rows"`
	Values  []string `json:"values"`
}

// formScore is how faithful one file's template is to its truth.
type formScore struct {
	file        string
	title       bool
	labels      int // found
	headers     bool
	baked       []string // data values kept as static text
	valueFields []string // fields named after a value
}

var (
	staticRE = regexp.MustCompile(`(?s)<staticText>.*?<text><!\[CDATA\[(.*?)\]\]></text>`)
	fieldRE  = regexp.MustCompile(`<field name="([^"]+)"`)
)

// normText is text as compared: no spaces, colons, commas or underscores
// (a signature line), letters in lower case, full-width forms as half.
func normText(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 0xff01 && r <= 0xff5e {
			r -= 0xfee0
		}
		if unicode.IsSpace(r) || strings.ContainsRune(":,_;.", r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// slug is a value as a field name made from it would hold it.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

// scoreTemplate scores a template against the truth of its form.
func scoreTemplate(file, src string, t formTruth) formScore {
	s := formScore{file: file}
	var texts []string
	for _, m := range staticRE.FindAllStringSubmatch(src, -1) {
		texts = append(texts, normText(m[1]))
	}
	has := func(want string) bool { return slices.Contains(texts, normText(want)) }
	s.title = has(t.Title)
	for _, l := range t.Labels {
		if has(l) {
			s.labels++
		}
	}
	s.headers = true
	for _, h := range t.Headers {
		s.headers = s.headers && has(h)
	}
	known := map[string]bool{normText(t.Title): true}
	for _, l := range append(slices.Clone(t.Labels), t.Headers...) {
		known[normText(l)] = true
	}
	var fields []string
	for _, m := range fieldRE.FindAllStringSubmatch(src, -1) {
		fields = append(fields, m[1])
	}
	for _, v := range t.Values {
		n := normText(v)
		if len([]rune(n)) < 2 || known[n] {
			continue
		}
		for _, x := range texts {
			if strings.Contains(x, n) {
				s.baked = append(s.baked, v)
				break
			}
		}
		if sl := slug(v); len(sl) >= 4 {
			for _, f := range fields {
				if strings.Contains(f, sl) {
					s.valueFields = append(s.valueFields, f)
				}
			}
		}
	}
	return s
}

// needProgram skips without a program (a failure under CI).
func needProgram(t testing.TB, name, pkg string) {
	t.Helper()
	testenv.NeedProgram(t, name, "Debian package "+pkg)
}

// TestFormsCorpus reads every file of the forms corpus (testdata/forms:
// pictures at two scales, PDFs with and without a text layer, XLSX and
// DOCX of Chinese and English forms) with no model — layout, skeleton,
// map_fields — scores each template against its form's truth file, prints
// the figures and holds them to floors.
func TestFormsCorpus(t *testing.T) {
	needProgram(t, "tesseract", "tesseract-ocr, tesseract-ocr-chi-sim")
	needProgram(t, "pdftoppm", "poppler-utils")
	files, err := filepath.Glob("testdata/forms/*.*")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var scores []formScore
	var labels, found int
	var failed []string
	var wg sync.WaitGroup
	for _, file := range files {
		if strings.HasSuffix(file, ".json") || strings.HasSuffix(file, ".html") || strings.HasSuffix(file, ".css") || strings.HasSuffix(file, ".sh") {
			continue
		}
		name := filepath.Base(file)
		b, err := os.ReadFile(filepath.Join("testdata/forms", name[:strings.Index(name, ".")]+".json"))
		if err != nil {
			t.Fatalf("%s has no truth file: %v", name, err)
		}
		var truth formTruth
		if err := json.Unmarshal(b, &truth); err != nil {
			t.Fatalf("truth of %s: %v", name, err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out, err := report.Toolkit{}.Read(ctx, report.DetectKind(data), data)
			mu.Lock()
			defer mu.Unlock()
			labels += len(truth.Labels)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", name, err))
				scores = append(scores, formScore{file: name})
				return
			}
			s := scoreTemplate(name, report.MapFields(out.Skeleton, out.Labels), truth)
			found += s.labels
			scores = append(scores, s)
		}()
	}
	wg.Wait()
	slices.SortFunc(scores, func(a, b formScore) int { return strings.Compare(a.file, b.file) })
	var titles, headers, baked, valueFields int
	for _, s := range scores {
		t.Logf("%-20s title %-5v labels %2d headers %-5v baked %v value-named fields %v", s.file, s.title, s.labels, s.headers, s.baked, s.valueFields)
		if s.title {
			titles++
		}
		if s.headers {
			headers++
		}
		if len(s.baked) > 0 {
			baked++
		}
		if len(s.valueFields) > 0 {
			valueFields++
		}
	}
	for _, f := range failed {
		t.Errorf("not read: %s", f)
	}
	n := len(scores)
	recall := float64(found) / float64(max(labels, 1))
	t.Logf("%d files: title found %d (%.0f%%), label recall %.2f, table headers exact %d (%.0f%%), baked-in values in %d, fields named after values in %d",
		n, titles, 100*float64(titles)/float64(n), recall, headers, 100*float64(headers)/float64(n), baked, valueFields)
	if n < 20 {
		t.Errorf("the corpus has %d files, want at least 20", n)
	}
	// Floors from this corpus's results (raise them as the reading improves).
	if float64(titles) < floorTitle*float64(n) || recall < floorRecall || float64(headers) < floorHeaders*float64(n) || baked > maxBaked {
		t.Errorf("below the floors: title %d/%d (floor %.2f), label recall %.2f (floor %.2f), headers exact %d/%d (floor %.2f), baked-in values in %d files (at most %d)",
			titles, n, floorTitle, recall, floorRecall, headers, n, floorHeaders, baked, maxBaked)
	}
}

// The corpus's floors.
const (
	floorTitle   = 0.95
	floorRecall  = 0.90
	floorHeaders = 0.90
	maxBaked     = 1
)
