package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name             string
		data             string
		format           Format
		train, val, test int
		first            intent.Example
	}{
		{"clinc150", `{"train": [["book a flight", "book_flight"]], "oos_train": [["sing", "oos"]], "val": [["fly me", "book_flight"]], "oos_val": [["dance", "oos"]]}`,
			CLINC150, 2, 2, 0, intent.Example{Text: "book a flight", Intent: "book_flight"}},
		{"clinc150 test only", `{"test": [["a", "x"]], "oos_test": [["b", "oos"]]}`, CLINC150, 0, 0, 2, intent.Example{}},
		{"smp2019", `[{"text": "打开微信", "domain": "app", "intent": "LAUNCH", "slots": {"name": "微信"}}]`,
			SMP2019, 1, 0, 0, intent.Example{Text: "打开微信", Intent: "app.LAUNCH"}},
		{"banking77", "text,category\n\"Where is my card, please?\",card_arrival\nhi,greet\n",
			BANKING77, 2, 0, 0, intent.Example{Text: "Where is my card, please?", Intent: "card_arrival"}},
		{"csv with other columns", "id,label,utterance\n1,greet,hello\n", CSV, 1, 0, 0, intent.Example{Text: "hello", Intent: "greet"}},
		{"csv without header", "hello,greet\nbye,leave\n", CSV, 2, 0, 0, intent.Example{Text: "hello", Intent: "greet"}},
		{"byte order mark", "\ufefftext,category\nhi,greet\n", BANKING77, 1, 0, 0, intent.Example{Text: "hi", Intent: "greet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Detect([]byte(c.data))
			if err != nil || f != c.format {
				t.Fatalf("Detect = %q, %v; want %q", f, err, c.format)
			}
			s, err := Parse([]byte(c.data), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Train) != c.train || len(s.Val) != c.val || len(s.Test) != c.test {
				t.Fatalf("got %d/%d/%d examples, want %d/%d/%d", len(s.Train), len(s.Val), len(s.Test), c.train, c.val, c.test)
			}
			if c.train > 0 && s.Train[0] != c.first {
				t.Errorf("first example %+v, want %+v", s.Train[0], c.first)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		data   string
		format Format
	}{
		{"empty", "", ""},
		{"not a table", "hello", ""},
		{"clinc150 pair", `{"train": [["only text"]]}`, CLINC150},
		{"clinc150 no examples", `{"other": []}`, CLINC150},
		{"smp2019 object", `{"text": "x"}`, SMP2019},
		{"another JSON list, detected as smp2019", `[{"question": "a", "label": "x"}, {"question": "b", "label": "y"}]`, ""},
		{"csv short row", "text,category\nhello\n", BANKING77},
		{"unknown format", "a,b\n", "xml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.format
			var err error
			if f == "" {
				f, err = Detect([]byte(c.data))
			}
			if err == nil {
				_, err = Parse([]byte(c.data), f)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("err %v, want ErrFormat", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte("text,intent\nhi,greet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, "")
	if err != nil || s.Format != CSV || len(s.Train) != 1 {
		t.Fatalf("Load = %+v, %v", s, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.csv"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err %v, want ErrNotExist", err)
	}
}
