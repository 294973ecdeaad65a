package datasource_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/datasource"
)

// TestReadConfigs reads a sources file as a YAML list and as a JSON
// object, and refuses an empty list, a bad or repeated name and a source
// without a URL.
func TestReadConfigs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := datasource.ReadConfigs(write("a.yaml", "- name: shop\n  url: ./shop.db\n  description: the shop\n- name: dw\n  url: postgres://u:p@h/db\n"))
	if err != nil || len(got) != 2 || got[1].URL != "postgres://u:p@h/db" || got[0].Description != "the shop" {
		t.Errorf("yaml list: %+v %v", got, err)
	}
	got, err = datasource.ReadConfigs(write("b.json", `{"sources":[{"name":"x","url":"mysql://root@127.0.0.1:3306/x"}]}`))
	if err != nil || len(got) != 1 || got[0].Name != "x" {
		t.Errorf("json object: %+v %v", got, err)
	}
	for _, bad := range []string{"[]", "- name: 'a b'\n  url: x\n", "- name: a\n", "- {name: a, url: x}\n- {name: a, url: y}\n", "{{{"} {
		if _, err := datasource.ReadConfigs(write("bad.yaml", bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestDefaultLimitsAreACopy: changing the limits one caller got changes
// no one else's.
func TestDefaultLimitsAreACopy(t *testing.T) {
	l := datasource.DefaultLimits()
	l.MaxRows = 1
	if datasource.DefaultLimits().MaxRows == 1 {
		t.Error("DefaultLimits returned a shared value")
	}
}

// TestUnavailable: a source that cannot be reached is said by name and
// reason, matching ErrUnavailable, without the cause; other errors pass.
func TestUnavailable(t *testing.T) {
	cause := errors.New("dial tcp 10.1.2.3:5432: connection refused")
	err := datasource.Unavailable("sales", &datasource.UnavailableError{Reason: "connection refused", Cause: cause})
	if !errors.Is(err, datasource.ErrUnavailable) || err.Error() != "source sales is unavailable: connection refused" || strings.Contains(err.Error(), "10.1.2.3") {
		t.Errorf("unavailable: %v", err)
	}
	if other := errors.New("syntax error"); datasource.Unavailable("sales", other) != other {
		t.Error("another error was changed")
	}
	if err := datasource.NotAnswering("dw"); !errors.Is(err, datasource.ErrUnavailable) || !strings.Contains(err.Error(), "source dw is unavailable") {
		t.Errorf("not answering: %v", err)
	}
}
