package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// This file keeps what the server knows of itself out of what a client
// reads: the owner ids under which threads are kept, temporary paths, and
// the text of errors that are the server's own business.

// ownerPrefix is the owner id part of a thread's key (see threadKey) as
// it appears in wrapped error text: "key:0123456789abcdef/".
var ownerPrefix = regexp.MustCompile(`key:[0-9a-f]{16}/`)

// ownerID is an owner id standing alone.
var ownerID = regexp.MustCompile(`key:[0-9a-f]{16}\b`)

// tempPaths matches a path under the system's temporary folder (and
// under /tmp and /var/tmp, wherever TMPDIR points).
var tempPaths = func() *regexp.Regexp {
	dirs := []string{"/tmp", "/var/tmp", "/dev/shm"}
	if d := filepath.Clean(os.TempDir()); d != "." && d != "/" && !strings.Contains(strings.Join(dirs, " "), d) {
		dirs = append(dirs, d)
	}
	alt := make([]string, len(dirs))
	for i, d := range dirs {
		alt[i] = regexp.QuoteMeta(d)
	}
	return regexp.MustCompile(`(?:` + strings.Join(alt, "|") + `)/[^\s"'<>:;,)]*`)
}()

// Redact returns text with what a client must not read taken out: the
// owner ids of thread keys ("key:…/thread" reads "thread", so a message
// names a thread by the id its client gave) and paths of temporary files
// ("a temporary file"). The API's error responses and run errors go
// through it; an agent's own endpoints that build messages from errors
// should too (WriteError does).
func Redact(text string) string {
	if strings.Contains(text, "key:") {
		text = ownerPrefix.ReplaceAllString(text, "")
		text = ownerID.ReplaceAllString(text, "an API key")
	}
	if strings.Contains(text, "/") {
		text = tempPaths.ReplaceAllString(text, "a temporary file")
	}
	return text
}

// ErrorID is a short id for an error that a client is told only by id:
// the same text gets the same id, and the server's log carries the id
// beside the whole error (see internalError), so that an operator finds
// what went wrong from what the client quotes.
func ErrorID(err error) string {
	sum := sha256.Sum256([]byte(err.Error()))
	return hex.EncodeToString(sum[:4])
}

// internalError is the 500 a client gets for an error that is not its
// own doing: an id to quote, never the error's text, which names files,
// tables, owner ids and what tools said. The server logs the error with
// the same id.
func internalError(err error) *apiError {
	return errorf(http.StatusInternalServerError, "internal", "internal error (id %s); the server's log has the details", ErrorID(err))
}

// statusCoder is an error that says how to answer it: the server's API
// errors and those of an agent's own.
type statusCoder interface {
	error
	HTTPStatus() int
	ErrorCode() string
}

// PublicError returns the status, code and message that a client may be
// shown for err, for an agent's own endpoints: an API error (a 404 for a
// thread of another key, a 409, a 429 over a quota, a 503 while the
// database refuses writes) as the API answers it, redacted; any other
// error as an internal error with an id (see ErrorID), which the caller
// should log with the error.
func PublicError(err error) (status int, code, message string) {
	ae := toAPI(err)
	var sc statusCoder
	if ae.status >= 500 && ae.code == "internal" && !errors.As(err, &sc) {
		ae = internalError(err)
	}
	return ae.status, ae.code, Redact(ae.message)
}
