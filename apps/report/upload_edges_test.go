package report_test

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"mime/multipart"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/loomkit/loom/apps/report"
)

// TestUploadEdges: a refused upload (413, 415, 400: too large, not a
// known kind, not multipart, malformed, no file, too many fields) is a
// 4xx JSON error that stores nothing and makes no thread; a thread made
// only by an upload has a state (200, empty values); a file name with
// path separators or control characters is kept as its last element; a
// large field beside the file is skipped.
func TestUploadEdges(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	l := serve(t, nil, db, report.ServerOptions{})
	form := func(build func(mw *multipart.Writer)) (string, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		build(mw)
		mw.Close()
		return mw.FormDataContentType(), b.Bytes()
	}
	file := func(name string, data []byte) func(*multipart.Writer) {
		return func(mw *multipart.Writer) {
			fw, _ := mw.CreateFormFile("file", name)
			fw.Write(data)
		}
	}
	send := func(thread string, build func(*multipart.Writer)) (int, []byte) {
		ct, body := form(build)
		return l.Send(keyA, "POST", "/api/v1/report/threads/"+thread+"/uploads", ct, bytes.NewReader(body))
	}
	raw := func(contentType, body string) func(string) (int, []byte) {
		return func(thread string) (int, []byte) {
			return l.Send(keyA, "POST", "/api/v1/report/threads/"+thread+"/uploads", contentType, strings.NewReader(body))
		}
	}
	multi := func(build func(*multipart.Writer)) func(string) (int, []byte) {
		return func(thread string) (int, []byte) { return send(thread, build) }
	}
	big := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, report.MaxUpload)...)
	for _, c := range []struct {
		thread string
		send   func(thread string) (int, []byte)
		want   int
	}{
		{"r413", multi(file("big.png", big)), 413},
		{"r413b", multi(file("bomb.png", pngHeader(30000, 30000))), 413},
		{"r415c", multi(file("zip.png", append([]byte("\x89PNG\r\n\x1a\n"), []byte("PK\x03\x04 a zip")...))), 415},
		{"r422", multi(file("xxe.jrxml", []byte(`<?xml version="1.0"?>
<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM "file:///etc/passwd"> %p; ]>
<jasperReport name="r"/>`))), 422},
		{"r415", multi(file("a.png", []byte("not a picture"))), 415},
		{"r415b", raw("text/plain", goodJRXML), 415},
		{"r400a", raw("multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n<jasperReport"), 400},
		{"r400b", raw("multipart/form-data; boundary=xyz", "garbage without a boundary"), 400},
		{"r400c", multi(func(mw *multipart.Writer) { mw.WriteField("other", "x") }), 400},
		{"r400d", multi(func(mw *multipart.Writer) {
			for i := range 40 {
				mw.WriteField(fmt.Sprintf("f%d", i), "x")
			}
			file("r.jrxml", []byte(goodJRXML))(mw)
		}), 400},
	} {
		code, b := c.send(c.thread)
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(b, &e); code != c.want || err != nil || e.Error.Message == "" {
			t.Errorf("%s: %d %.300s, want %d with a JSON error", c.thread, code, b, c.want)
		}
		if c.want == 422 && (!strings.Contains(e.Error.Message, "line 2") || strings.Contains(e.Error.Message, "root:")) {
			t.Errorf("%s: %q should name line 2 and nothing of the file it points at", c.thread, e.Error.Message)
		}
		if code, b := l.Do(keyA, "GET", "/threads/"+c.thread, nil); code != 404 {
			t.Errorf("%s: the refused upload made a thread: %d %.300s", c.thread, code, b)
		}
	}

	// A thread made only by an upload has a state.
	code, b := send("up1", file("../../etc/\u202epasswd.jrxml", []byte(goodJRXML)))
	var up report.Upload
	if err := json.Unmarshal(b, &up); code != 201 || err != nil {
		t.Fatalf("upload: %d %s", code, b)
	}
	if up.Name != "passwd.jrxml" {
		t.Errorf("the upload's name is %q, want passwd.jrxml", up.Name)
	}
	for _, path := range []string{"/threads/up1/state", "/threads/up1", "/threads/up1/history"} {
		if code, b := l.Do(keyA, "GET", path, nil); code != 200 {
			t.Errorf("GET %s of an upload-only thread: %d %.300s", path, code, b)
		}
	}
	if code, b := l.Do(keyA, "GET", "/threads/up1/state", nil); !strings.Contains(string(b), `"values":{}`) {
		t.Errorf("the state of an upload-only thread: %d %s", code, b)
	}
	// A path no endpoint takes is a JSON 404, not the router's text.
	for _, p := range []string{"/api/v1/report/threads/up1/versions/", "/api/v1/report/nothing"} {
		var e struct{ Error struct{ Code string } }
		if code, b := l.Do(keyA, "GET", p, nil); code != 404 || json.Unmarshal(b, &e) != nil || e.Error.Code != "not_found" {
			t.Errorf("GET %s: %d %.200s", p, code, b)
		}
	}
	// A windows path, and a large field before the file, which is skipped.
	withField := func(mw *multipart.Writer) {
		mw.WriteField("note", strings.Repeat("n", 2<<20))
		file(`C:\Users\x\sales.jrxml`, []byte(goodJRXML))(mw)
	}
	code, b = send("up2", withField)
	if err := json.Unmarshal(b, &up); code != 201 || err != nil || up.Name != "sales.jrxml" {
		t.Errorf("upload with a large field and a windows path: %d %.300s", code, b)
	}
	l.Stop()

	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var threads, uploads int
	if err := sdb.QueryRow(`SELECT count(*) FROM loom_threads`).Scan(&threads); err != nil {
		t.Fatal(err)
	}
	if err := sdb.QueryRow(`SELECT count(*) FROM report_uploads`).Scan(&uploads); err != nil {
		t.Fatal(err)
	}
	if threads != 2 || uploads != 2 {
		t.Errorf("%d threads and %d uploads stored, want the two good uploads' own", threads, uploads)
	}
}

// pngHeader is the start of a PNG that declares a w×h 8-bit RGBA picture:
// enough for its size to be read, nothing to decode.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}
