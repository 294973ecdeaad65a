package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
)

// TestAgentRoutesUploads: an agent with an UploadLimit takes multipart
// bodies up to it on its Routes (a larger one is 413), and other bodies
// must still be JSON; an agent without one takes no multipart body.
func TestAgentRoutesUploads(t *testing.T) {
	uploads := routed("files", "")
	uploads.UploadLimit = 3 << 20
	uploads.Routes = func(*server.Server, graph.Runner) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f, _, err := r.FormFile("file")
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				return
			case err != nil:
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			n, _ := io.Copy(io.Discard, f)
			fmt.Fprint(w, n)
		})
	}
	var reg server.Registry
	for _, a := range []server.Agent{uploads, routed("plain", "")} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	base := servertest.Serve(t, srv)
	post := func(path string, size int, multi bool) (int, string) {
		t.Helper()
		var body bytes.Buffer
		ct := "text/plain"
		if multi {
			mw := multipart.NewWriter(&body)
			fw, _ := mw.CreateFormFile("file", "f.bin")
			fw.Write(bytes.Repeat([]byte{'x'}, size))
			mw.Close()
			ct = mw.FormDataContentType()
		} else {
			body.Write(bytes.Repeat([]byte{'x'}, size))
		}
		resp, err := http.Post(base+path, ct, &body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path  string
		size  int
		multi bool
		want  int
	}{
		{"/api/v1/files/up", 2 << 20, true, 200},  // above MaxBody, below the upload limit
		{"/api/v1/files/up", 5 << 20, true, 413},  // above the upload limit
		{"/api/v1/files/up", 1 << 10, false, 415}, // other bodies: JSON only
		{"/api/v1/plain/up", 1 << 10, true, 415},  // no uploads: JSON only
	} {
		if code, body := post(c.path, c.size, c.multi); code != c.want {
			t.Errorf("%s %d bytes multipart %t: %d %.200s, want %d", c.path, c.size, c.multi, code, body, c.want)
		}
	}
}
