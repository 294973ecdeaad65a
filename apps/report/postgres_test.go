package report_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/store/storetest"
)

// TestOnPostgres: on a server whose database is PostgreSQL, uploads,
// versions and undo work the same as on SQLite.
func TestOnPostgres(t *testing.T) {
	l := serve(t, nil, storetest.PostgresURL(t), report.ServerOptions{})
	id := l.uploadID("pg1", "sales.jrxml", []byte(goodJRXML))
	if st := l.run("pg1", report.Input{Upload: id}).state; st.Final != goodJRXML || st.Version != 1 {
		t.Fatalf("from the template: version %d reply %q", st.Version, st.Turn.Reply)
	}
	id = l.uploadID("pg1", "bigger.jrxml", []byte(biggerTitle))
	if st := l.run("pg1", report.Input{Upload: id, Message: "用这个模板"}).state; st.JRXML != biggerTitle || st.Version != 2 {
		t.Fatalf("second template: version %d", st.Version)
	}
	if st := l.run("pg1", report.Input{Message: "撤销"}).state; st.JRXML != goodJRXML || st.Version != 3 {
		t.Errorf("undo: version %d", st.Version)
	}
	code, b := l.Do(keyA, "GET", "/api/v1/report/threads/pg1/versions", nil)
	var vs struct{ Versions []report.Version }
	if err := json.Unmarshal(b, &vs); code != 200 || err != nil || len(vs.Versions) != 3 {
		t.Errorf("versions: %d %s", code, b)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/pg1/versions/2.pdf", nil); code != 200 || !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Errorf("version 2 as PDF: %d", code)
	}
}
