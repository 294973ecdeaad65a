package knowledge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// Request body limits.
const (
	maxEntryBody = 256 << 10
	// MaxImport is the largest knowledge file import takes as YAML
	// (ImportTypes); a server must let such bodies through (see
	// server.Agent.UploadLimit and UploadTypes). A JSON body stays
	// within the server's own limit on JSON bodies.
	MaxImport     = maxFile
	maxImportBody = MaxImport
)

// ImportTypes are the media types import takes a YAML knowledge file
// as, besides application/json.
var ImportTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}

// Handler returns the knowledge API under prefix (a path ending in "/",
// such as "/api/v1/dataagent/knowledge/"), for an agent to serve through
// server.Agent.Routes, where every request carries its caller:
//
//	GET    {prefix}sources                 the configured sources and those the caller has knowledge of
//	GET    {prefix}entries?source=&kind=   every entry, or those of a source and kind
//	GET    {prefix}{kinds}?source=         terms, documents, examples or semantic
//	POST   {prefix}{kinds}                 create one (JSON Entry with its source) → 201
//	GET    {prefix}{kinds}/{id}            one entry
//	PUT    {prefix}{kinds}/{id}            replace its fields
//	DELETE {prefix}{kinds}/{id}            delete it
//	POST   {prefix}import?source=          a knowledge file upserted → ImportResult:
//	                                       YAML as application/yaml (or another
//	                                       of ImportTypes), up to MaxImport bytes,
//	                                       or JSON (a file, or {"yaml": "…"})
//	GET    {prefix}export?source=          the source's knowledge as a YAML file
//
// Errors are JSON, {"error": {"code": "...", "message": "..."}}: 400
// invalid (saying which field of which entry is wrong, an unknown field
// included), 404 not_found (another key's entries are not found either),
// 409 exists (the natural key is taken), 413 too_large, 415
// unsupported_media_type (naming the types import takes), 422
// unknown_source (not a configured source) or unsafe_sql (an example's
// SQL the SQL guard refuses, saying why), 429 quota_exceeded (the key
// holds as many entries as the store allows).
func Handler(s *Store, prefix string) http.Handler {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	h := &handler{s: s, log: slog.Default()}
	m := http.NewServeMux()
	m.HandleFunc("GET "+prefix+"sources", h.sources)
	m.HandleFunc("GET "+prefix+"entries", func(w http.ResponseWriter, r *http.Request) { h.list(w, r, "") })
	m.HandleFunc("POST "+prefix+"import", h.importFile)
	m.HandleFunc("GET "+prefix+"export", h.export)
	for _, k := range Kinds {
		m.HandleFunc("GET "+prefix+k.plural(), func(w http.ResponseWriter, r *http.Request) { h.list(w, r, k) })
		m.HandleFunc("POST "+prefix+k.plural(), func(w http.ResponseWriter, r *http.Request) { h.create(w, r, k) })
		m.HandleFunc("GET "+prefix+k.plural()+"/{id}", func(w http.ResponseWriter, r *http.Request) { h.get(w, r, k) })
		m.HandleFunc("PUT "+prefix+k.plural()+"/{id}", func(w http.ResponseWriter, r *http.Request) { h.update(w, r, k) })
		m.HandleFunc("DELETE "+prefix+k.plural()+"/{id}", func(w http.ResponseWriter, r *http.Request) { h.delete(w, r, k) })
	}
	m.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
		server.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no knowledge endpoint %s %s; the paths under %s are sources, entries, terms, documents, examples, semantic, import and export", r.Method, r.URL.Path, prefix))
	})
	return m
}

type handler struct {
	s   *Store
	log *slog.Logger
}

func (h *handler) sources(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r) {
		return
	}
	srcs, err := h.s.Sources(r.Context())
	h.write(w, http.StatusOK, map[string]any{"sources": nonNil(srcs)}, err)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, kind Kind) {
	allowed := []string{"source"}
	if kind == "" {
		allowed = append(allowed, "kind")
	}
	if !checkQuery(w, r, allowed...) {
		return
	}
	f := Filter{Source: r.URL.Query().Get("source"), Kind: kind}
	if f.Source != "" {
		if err := checkSource(f.Source); err != nil {
			h.write(w, 0, nil, err)
			return
		}
	}
	if k := r.URL.Query().Get("kind"); kind == "" && k != "" {
		if f.Kind = Kind(k); !f.Kind.Valid() {
			h.write(w, 0, nil, fmt.Errorf("%w: kind %q is not one of term, document, example, semantic", ErrInvalid, k))
			return
		}
	}
	entries, err := h.s.List(r.Context(), f)
	h.write(w, http.StatusOK, map[string]any{"entries": nonNil(entries)}, err)
}

func (h *handler) create(w http.ResponseWriter, r *http.Request, kind Kind) {
	e, ok := h.decodeEntry(w, r, kind)
	if !ok {
		return
	}
	out, err := h.s.Create(r.Context(), e)
	h.write(w, http.StatusCreated, out, err)
}

func (h *handler) get(w http.ResponseWriter, r *http.Request, kind Kind) {
	h.byID(w, r, kind, func(id string) (any, error) { return h.s.Get(r.Context(), kind, id) })
}

// byID answers a request without a body about entry {id} of kind with
// what fn returns.
func (h *handler) byID(w http.ResponseWriter, r *http.Request, kind Kind, fn func(id string) (any, error)) {
	if !checkQuery(w, r) {
		return
	}
	id, ok := pathID(w, r, kind)
	if !ok {
		return
	}
	v, err := fn(id)
	h.writeFound(w, v, err, kind, id)
}

func (h *handler) update(w http.ResponseWriter, r *http.Request, kind Kind) {
	id, ok := pathID(w, r, kind)
	if !ok {
		return
	}
	e, ok := h.decodeEntry(w, r, kind)
	if !ok {
		return
	}
	out, err := h.s.Update(r.Context(), id, e)
	h.writeFound(w, out, err, kind, id)
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request, kind Kind) {
	h.byID(w, r, kind, func(id string) (any, error) {
		return map[string]any{"id": id, "deleted": true}, h.s.Delete(r.Context(), kind, id)
	})
}

func (h *handler) importFile(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r, "source") {
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Header.Get("Content-Type") != "" && !slices.Contains(ImportTypes, mt) && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		server.WriteError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("a knowledge file is sent as %s (its text as it is) or application/json (a JSON file, or {\"yaml\": \"…\"}), not %q", strings.Join(ImportTypes, ", "), r.Header.Get("Content-Type")))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxImportBody))
	if err != nil {
		h.write(w, 0, nil, fmt.Errorf("read the file: %w", err))
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		h.write(w, 0, nil, fmt.Errorf("%w: the request body is empty; send a knowledge file (YAML or JSON)", ErrInvalid))
		return
	}
	// Loom's API takes JSON bodies only: YAML text comes as {"yaml": "…"}.
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		var wrapped struct {
			YAML *string `json:"yaml"`
		}
		if json.Unmarshal(body, &wrapped) == nil && wrapped.YAML != nil {
			var only map[string]json.RawMessage
			_ = json.Unmarshal(body, &only)
			if len(only) != 1 {
				h.write(w, 0, nil, fmt.Errorf("%w: a body with \"yaml\" holds nothing else; put the source in the file or in ?source=", ErrInvalid))
				return
			}
			body = []byte(*wrapped.YAML)
		}
	}
	f, err := Parse(body)
	if err != nil {
		h.write(w, 0, nil, err)
		return
	}
	switch src := r.URL.Query().Get("source"); {
	case src == "":
	case f.Source == "":
		f.Source = src
	case strings.TrimSpace(f.Source) != src:
		h.write(w, 0, nil, fmt.Errorf("%w: the file is about source %q, the request about %q", ErrInvalid, f.Source, src))
		return
	}
	res, err := h.s.Import(r.Context(), f)
	h.write(w, http.StatusOK, res, err)
}

func (h *handler) export(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r, "source") {
		return
	}
	f, err := h.s.Export(r.Context(), r.URL.Query().Get("source"))
	var b []byte
	if err == nil {
		b, err = f.Marshal()
	}
	if err != nil {
		h.write(w, 0, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-knowledge.yaml"`, f.Source))
	w.Write(b)
}

// decodeEntry reads the request's entry of kind, refusing unknown fields,
// fields the server gives (id, times) and another kind; it answers the
// error itself and returns false.
func (h *handler) decodeEntry(w http.ResponseWriter, r *http.Request, kind Kind) (Entry, bool) {
	if !checkQuery(w, r) {
		return Entry{}, false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEntryBody))
	dec.DisallowUnknownFields()
	var e Entry
	err := dec.Decode(&e)
	switch {
	case errors.Is(err, io.EOF):
		err = fmt.Errorf("%w: the request body is empty; send the %s as a JSON object", ErrInvalid, kind)
	case err != nil:
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			err = fmt.Errorf("%w: request body: %s", ErrInvalid, strings.TrimPrefix(err.Error(), "json: "))
		}
	case dec.More():
		err = fmt.Errorf("%w: request body: data after the JSON object", ErrInvalid)
	case e.ID != "":
		err = fmt.Errorf("%w: id is given by the server; leave it out", ErrInvalid)
	case !e.CreatedAt.IsZero() || !e.UpdatedAt.IsZero():
		err = fmt.Errorf("%w: created_at and updated_at are given by the server; leave them out", ErrInvalid)
	case e.Kind != "" && e.Kind != kind:
		err = fmt.Errorf("%w: kind %q does not match the path, which is about a %s", ErrInvalid, e.Kind, kind)
	}
	if err != nil {
		h.write(w, 0, nil, err)
		return Entry{}, false
	}
	e.Kind = kind
	return e, true
}

// checkQuery answers 400 and returns false when the request has a query
// parameter not in allowed, or one twice.
func checkQuery(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	for name, vs := range r.URL.Query() {
		switch {
		case !slices.Contains(allowed, name):
			msg := fmt.Sprintf("unknown query parameter %q", name)
			if len(allowed) > 0 {
				msg += "; this endpoint takes " + strings.Join(allowed, ", ")
			}
			server.WriteError(w, http.StatusBadRequest, "invalid", msg)
			return false
		case len(vs) > 1:
			server.WriteError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("query parameter %q given %d times", name, len(vs)))
			return false
		}
	}
	return true
}

// pathID returns the path's {id}; one no entry can have is answered as
// not found.
func pathID(w http.ResponseWriter, r *http.Request, kind Kind) (string, bool) {
	id := r.PathValue("id")
	if id == "" || len(id) > 100 || strings.ContainsRune(id, 0) {
		server.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no %s %q", kind, id))
		return "", false
	}
	return id, true
}

// writeFound is write for a request about entry id of kind: not finding
// it (another key's is not found either) says so in those words.
func (h *handler) writeFound(w http.ResponseWriter, v any, err error, kind Kind, id string) {
	if errors.Is(err, ErrNotFound) {
		server.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no %s %q", kind, id))
		return
	}
	h.write(w, http.StatusOK, v, err)
}

// write answers v with status, or err as the error JSON.
func (h *handler) write(w http.ResponseWriter, status int, v any, err error) {
	if err == nil {
		writeJSON(w, status, v)
		return
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		server.WriteError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
	case errors.Is(err, ErrUnknownSource):
		server.WriteError(w, http.StatusUnprocessableEntity, "unknown_source", afterSentinel(err, ErrUnknownSource))
	case errors.Is(err, ErrUnsafeSQL):
		server.WriteError(w, http.StatusUnprocessableEntity, "unsafe_sql", afterSentinel(err, ErrUnsafeSQL))
	case errors.Is(err, ErrInvalid):
		server.WriteError(w, http.StatusBadRequest, "invalid", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	case errors.Is(err, ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, ErrExists):
		server.WriteError(w, http.StatusConflict, "exists", err.Error())
	case errors.Is(err, ErrQuota):
		w.Header().Set("Retry-After", "60")
		server.WriteError(w, http.StatusTooManyRequests, "quota_exceeded", err.Error())
	case store.IsInvalidText(err):
		server.WriteError(w, http.StatusBadRequest, "invalid_text", "text may not contain the character NUL (\\u0000)")
	case store.IsUnavailable(err):
		w.Header().Set("Retry-After", "1")
		server.WriteError(w, http.StatusServiceUnavailable, "database_unavailable", "the database is unavailable; try again shortly: "+err.Error())
	default:
		h.log.Error("knowledge request failed", "err", err)
		server.WriteError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// afterSentinel is err's text from where sentinel's ends: what is wrong,
// without the operation around it.
func afterSentinel(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()+": "); i >= 0 {
		return msg[i+len(sentinel.Error())+2:]
	}
	return msg
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
