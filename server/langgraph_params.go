package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/loomkit/loom/internal/nulchar"
)

// This file serves the LangGraph API's the checks of query and body parameters that every resource shares (see langgraph.go).

// Bounds of the list endpoints' pages.
const (
	defaultPage = 10
	maxPage     = 1000
	maxOffset   = 1 << 30
)

// page is the limit and offset of a list request's body; a limit of 0
// means defaultPage.
type page struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// check checks p and fills in the default limit.
func (p *page) check() error {
	if err := inRange("limit", p.Limit, 0, maxPage); err != nil {
		return err
	}
	if err := inRange("offset", p.Offset, 0, maxOffset); err != nil {
		return err
	}
	if p.Limit == 0 {
		p.Limit = defaultPage
	}
	return nil
}

// invalidParameter is the error for a parameter the request gave wrong.
func invalidParameter(name, got, want string) error {
	return errorf(http.StatusUnprocessableEntity, "invalid_parameter", "%s: want %s, not %s", name, want, got)
}

// inRange checks the number n that a request gave for name.
func inRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return invalidParameter(name, strconv.Itoa(n), fmt.Sprintf("a whole number from %d to %d", lo, hi))
	}
	return nil
}

// queryInt reads the query parameter name: a whole number from lo to hi,
// or dflt when it is absent.
func queryInt(r *http.Request, name string, dflt, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return dflt, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalidParameter("query parameter "+name, strconv.Quote(v), fmt.Sprintf("a whole number from %d to %d", lo, hi))
	}
	return n, nil
}

// queryBool reads the query parameter name: true, false, 1 or 0 (false
// when it is absent).
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalidParameter("query parameter "+name, strconv.Quote(v), "true or false")
	}
	return b, nil
}

// oneOf checks that v, which a request gave for name, is "" or one of
// choices.
func oneOf(name, v string, choices ...string) error {
	if v == "" || slices.Contains(choices, v) {
		return nil
	}
	return invalidParameter(name, strconv.Quote(v), "one of "+strings.Join(choices, ", "))
}

// What thread searches and run lists may filter and sort by.
var (
	threadStatuses = []string{StatusIdle, StatusBusy, StatusInterrupted, StatusError}
	threadSorts    = []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
	runStatuses    = []string{runPending, runRunning, runSuccess, runError, runInterrupted}
)

// checkMetadata refuses thread metadata holding the character NUL
// (\u0000), which PostgreSQL's jsonb cannot hold: searching threads by
// metadata works alike on every database.
func checkMetadata(m map[string]json.RawMessage) error {
	for k, v := range m {
		var x any
		if strings.ContainsRune(k, 0) || (json.Unmarshal(v, &x) == nil && nulchar.In(x)) {
			return errorf(http.StatusUnprocessableEntity, "invalid_metadata", "metadata %q: keys and values may not contain the character NUL (\\u0000)", k)
		}
	}
	return nil
}

// errNotUTF8 is what a request body that is not UTF-8 fails with: JSON
// is UTF-8, and PostgreSQL refuses text that is not.
var errNotUTF8 = errors.New("the body is not UTF-8")

// utf8Reader reads r and fails with errNotUTF8 at the first bytes that
// are not UTF-8; a character split between two reads is checked whole.
type utf8Reader struct {
	r    io.Reader
	tail []byte // the start of a character the last read split
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, err // too large, too slow: that, not what was cut
	}
	b := p[:n]
	if len(u.tail) > 0 {
		b = append(u.tail, b...)
	}
	end := len(b)
	if err == nil {
		// Leave a character begun at the end for the next read.
		for i := len(b) - 1; i >= max(len(b)-utf8.UTFMax+1, 0); i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					end = i
				}
				break
			}
		}
	}
	if !utf8.Valid(b[:end]) {
		return 0, errNotUTF8
	}
	u.tail = append([]byte(nil), b[end:]...)
	return n, err
}

// decodeKnown is decode for a body whose every field the server must
// act on (a run request): a field v has no place for is a 422 that names
// it (what says whose: "run"), never dropped.
func decodeKnown(r *http.Request, what string, v any) error {
	return decodeBody(r, v, what)
}

// unmarshalKnown decodes raw into v as decodeKnown does.
func unmarshalKnown(raw []byte, what string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return errorf(http.StatusUnprocessableEntity, "unsupported_field", "%s field %s is not supported by this server", what, f)
		}
		return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON body: %v", err)
	}
	return nil
}
