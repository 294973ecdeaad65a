package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/apps/internal/threadstate"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/panel"
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/apps/report/xsd"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// Kinds of upload, told by content, never by name.
const (
	kindImage = "image"
	kindXLSX  = "xlsx"
	kindPDF   = "pdf"
	KindDOCX  = "docx"
	KindJRXML = "jrxml"
)

// MaxUpload bounds an uploaded file (10 MiB).
const MaxUpload = 10 << 20

// routesBase is where the agent's own endpoints are served.
const routesBase = "/api/v1/report/"

// ServerOptions configure the agent as Loom's server and command line
// serve it.
type ServerOptions struct {
	// Model is the language model; nil works without one.
	Model llm.Model
	// Layouts reads uploaded forms (default: the toolkit's, Toolkit).
	Layouts layouts
	// Templates is the templates knowledge base (default: the JRXML files
	// of TemplatesDir; none without it).
	Templates *Knowledge
	// TemplatesDir is a directory of JRXML files to learn from.
	TemplatesDir string
	// Schemas are XSD files to validate against (none: structural checks
	// only).
	Schemas []string
	// MaxRetry, SSIM and ContextTokens: see Config.
	MaxRetry      int
	SSIM          float64
	ContextTokens int
	// Font is the TrueType font previews and PDFs are drawn with
	// (default render.DefaultFont).
	Font string
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Settings is what an assistant, or a run's config.configurable or
// context, may set for the report designer on Loom's server. MaxRetry
// lowers the correction budget for the run: the server's (loom serve
// --report-max-retry) is the graph's declared bound and the most a run
// may ask for.
type Settings struct {
	SSIM     float64 `json:"ssim,omitempty" jsonschema:"minimum=0,maximum=1,description=the similarity (SSIM) a template drawn from an uploaded picture must reach against it (default: the server's\\, 0.35)"`
	MaxRetry int     `json:"max_retry,omitempty" jsonschema:"minimum=1,description=the corrections a turn may spend on a template that fails validation (default and most: the server's)"`
}

// settingsSchema is Settings' schema with max_retry at most maxRetry,
// the graph's bound.
func settingsSchema(maxRetry int) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(server.ConfigSchemaFor[Settings](), &s); err != nil {
		panic(fmt.Sprintf("report: settings schema: %v", err))
	}
	s["properties"].(map[string]any)["max_retry"].(map[string]any)["maximum"] = maxRetry
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("report: settings schema: %v", err))
	}
	return b
}

// budgets turns a run's settings into the bound of its correction
// budget: the run's max_retry, when it sets one.
func budgets(config json.RawMessage) map[string]int {
	var s Settings
	if len(config) == 0 || json.Unmarshal(config, &s) != nil || s.MaxRetry <= 0 {
		return nil
	}
	return map[string]int{budgetRetries: s.MaxRetry}
}

// ServerAgent returns the agent as the server registers it, under the
// name "report". On the server's database its uploads, versions and past
// corrections live beside the checkpoints; its endpoints are served under
// /api/v1/report/.
func ServerAgent(opts ServerOptions) server.Agent {
	maxRetry := opts.MaxRetry
	if maxRetry <= 0 {
		maxRetry = DefaultMaxRetry
	}
	return server.Agent{
		Name:          agentName,
		Description:   "designs JasperReports templates (JRXML) in conversation: from a description, an uploaded form image, spreadsheet, PDF or template, with validation, correction, preview and versions (uploads, undo, preview and export work without a model)",
		DescriptionZh: "在对话中设计 JasperReports 报表模板（JRXML）：可以从文字描述、上传的表单图片、电子表格、PDF 或已有模板开始，带校验、自动修正、预览和版本管理（上传、撤销、预览和导出无需模型）",
		Panel:         panel.Files,
		InputSchema:   server.InputSchemaFor[Input](),
		ConfigSchema:  settingsSchema(maxRetry),
		Budgets:       budgets,
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			return build(ctx, opts, db)
		},
		Migrations: migrations,
		Routes: func(srv *server.Server, r graph.Runner) http.Handler {
			ar, ok := r.(agentRunner)
			if !ok {
				return http.NotFoundHandler()
			}
			return ar.agent.Routes(srv)
		},
		UploadLimit: MaxUpload,
		FromChat:    fromChat,
		Reply:       Reply,
	}
}

// agentRunner is the compiled graph with the Agent for its Routes.
type agentRunner struct {
	graph.Runner
	agent *Agent
}

// build makes the agent on the server's database: its checkpoints, and
// its uploads, versions and corrections beside them.
func build(ctx context.Context, opts ServerOptions, db *store.DB) (graph.Runner, error) {
	if opts.Layouts == nil {
		opts.Layouts = Toolkit{}
	}
	if opts.Templates == nil {
		if dir := opts.TemplatesDir; dir != "" {
			k, skipped, err := ImportTemplates(dir)
			if err != nil {
				return nil, fmt.Errorf("report: %w", err)
			}
			for _, e := range skipped {
				slog.Warn("report: a template of the knowledge base was skipped", "err", e)
			}
			opts.Templates = k
		}
	}
	cfg := Config{Model: opts.Model, Store: newSQLStore(db), Layouts: opts.Layouts, Templates: opts.Templates, MaxRetry: opts.MaxRetry, SSIM: opts.SSIM, ContextTokens: opts.ContextTokens, Font: opts.Font, Logger: opts.Logger}
	if len(opts.Schemas) > 0 {
		v, err := xsd.New(opts.Schemas...)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		cfg.Schema = v
	}
	a, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := a.Compile(db.Saver())
	if err != nil {
		return nil, err
	}
	return agentRunner{c, a}, nil
}

// fromChat turns a chat message into a run's input.
func fromChat(text string) (json.RawMessage, error) {
	return json.Marshal(Input{Message: strings.TrimSpace(text)})
}

// Reply is the assistant's text for a run: the turn's reply.
func Reply(state json.RawMessage, _ *checkpoint.Interrupt) string {
	var s State
	if err := json.Unmarshal(state, &s); err != nil {
		return string(state)
	}
	return s.Turn.Reply
}

// Routes are the agent's own endpoints, served by Loom's server behind
// its API keys:
//
//	POST /api/v1/report/threads/{id}/uploads             a file (multipart field "file"): {"id", "kind", …}
//	GET  /api/v1/report/threads/{id}/versions            the versions, oldest first
//	GET  /api/v1/report/threads/{id}/versions/{n}.{jrxml|png|pdf}
//	GET  /api/v1/report/threads/{id}/current.{jrxml|png|pdf}, preview.png
//
// A thread of another key is a 404; a bad upload a 4xx JSON error, with
// nothing stored and no thread made. An error of the server's own is a
// 5xx that names no file, key or tool.
func (a *Agent) Routes(srv *server.Server) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST "+routesBase+"threads/{id}/uploads", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		// The file is read and told first: a refused upload makes no
		// thread, which would count against the key's threads.
		u, status, code, err := readUpload(r)
		if err != nil {
			server.WriteError(w, status, code, err.Error())
			return
		}
		if err := srv.TrackThread(r.Context(), id, agentName, ""); err != nil {
			a.threadError(w, r, srv, id, err)
			return
		}
		// Kept under the thread's key, where the graph's nodes look.
		u.Thread, u.ID, u.Created = srv.ThreadKey(r.Context(), id), "up-"+checkpoint.NewID(), time.Now().UTC()
		if err := a.store.PutUpload(r.Context(), u); err != nil {
			srv.Fail(w, r, fmt.Errorf("report: store an upload to thread %s: %w", id, err))
			return
		}
		u.Thread = id
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(u)
	})
	m.HandleFunc("GET "+routesBase+"threads/{id}/versions", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if _, ok := a.thread(w, r, srv, id); !ok {
			return
		}
		vs, err := a.store.Versions(r.Context(), srv.ThreadKey(r.Context(), id))
		if err != nil {
			srv.Fail(w, r, fmt.Errorf("report: read the versions of thread %s: %w", id, err))
			return
		}
		for i := range vs {
			vs[i].Thread = id
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"versions": vs})
	})
	m.HandleFunc("GET "+routesBase+"threads/{id}/versions/{file}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s, ok := a.thread(w, r, srv, id)
		if !ok {
			return
		}
		num, ext, _ := strings.Cut(r.PathValue("file"), ".")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			server.WriteError(w, http.StatusNotFound, "not_found", "no version "+num+": versions are numbered from 1")
			return
		}
		v, err := a.store.Version(r.Context(), srv.ThreadKey(r.Context(), id), n)
		if errors.Is(err, errNotFound) {
			server.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("thread %s has no version %d", id, n))
			return
		} else if err != nil {
			srv.Fail(w, r, fmt.Errorf("report: read version %d of thread %s: %w", n, id, err))
			return
		}
		a.serveTemplate(w, r, srv, v.JRXML, s.Layout.formRows(), fmt.Sprintf("report-v%d", n), ext)
	})
	m.HandleFunc("GET "+routesBase+"threads/{id}/{file}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s, ok := a.thread(w, r, srv, id)
		if !ok {
			return
		}
		name, ext, _ := strings.Cut(r.PathValue("file"), ".")
		if name != "current" && !(name == "preview" && ext == "png") {
			server.WriteError(w, http.StatusNotFound, "not_found", "no such file: "+r.PathValue("file"))
			return
		}
		if s.JRXML == "" {
			server.WriteError(w, http.StatusNotFound, "no_template", "thread "+id+" has no template yet")
			return
		}
		a.serveTemplate(w, r, srv, s.JRXML, s.Layout.formRows(), "report", ext)
	})
	m.HandleFunc(routesBase, func(w http.ResponseWriter, r *http.Request) { // JSON, not the mux's text
		server.WriteError(w, http.StatusNotFound, "not_found", "no route for "+r.Method+" "+r.URL.Path)
	})
	return m
}

// thread reads a thread's state for the caller; a missing thread or one
// of another key is a 404.
func (a *Agent) thread(w http.ResponseWriter, r *http.Request, srv *server.Server, id string) (State, bool) {
	return threadstate.Read[State](w, r, srv, id, agentName, "not_report", "a report design")
}

// threadError answers a request whose thread could not be had: a thread
// that does not exist or is another key's is a 404; an error of the API
// (a bad id, another agent's thread, a quota) is answered as the API
// answers it; any other is the server's own, logged and not shown.
func (a *Agent) threadError(w http.ResponseWriter, r *http.Request, srv *server.Server, id string, err error) {
	if errors.Is(err, server.ErrNotFound) {
		server.WriteError(w, http.StatusNotFound, "not_found", "no thread "+id)
		return
	}
	srv.Fail(w, r, err)
}

// serveTemplate writes a template as JRXML, a PNG of its first page
// (?page=N for another) or a PDF. What is wrong with the template is a
// 422 that says so; a preview the server cannot draw (no font) is its
// own fault, logged and answered 503 without the details.
func (a *Agent) serveTemplate(w http.ResponseWriter, r *http.Request, srv *server.Server, src string, form []render.Row, name, ext string) {
	switch ext {
	case "jrxml":
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.jrxml"`)
		io.WriteString(w, src)
	case "png":
		page := 1
		if p := r.URL.Query().Get("page"); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 {
				server.WriteError(w, http.StatusBadRequest, "bad_page", "page must be a number from 1")
				return
			}
			page = n
		}
		if _, err := a.raster.get(); err != nil {
			a.unavailable(w, r, err)
			return
		}
		b, err := a.png(src, form, page-1)
		var pe *pageError
		if errors.As(err, &pe) {
			server.WriteError(w, http.StatusNotFound, "no_page", pe.Error())
			return
		}
		if err != nil {
			server.WriteError(w, http.StatusUnprocessableEntity, "render_failed", err.Error())
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(b)
	case "pdf":
		res, err := layOut(src, form)
		if err != nil {
			server.WriteError(w, http.StatusUnprocessableEntity, "render_failed", err.Error())
			return
		}
		var pdf bytes.Buffer
		if err := render.WritePDF(&pdf, res, a.cfg.Font); err != nil {
			a.unavailable(w, r, fmt.Errorf("writing the PDF: %w", err))
			return
		}
		b := pdf.Bytes()
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.pdf"`)
		w.Write(b)
	default:
		server.WriteError(w, http.StatusNotFound, "not_found", "ask for .jrxml, .png or .pdf")
	}
}

// unavailable answers a request for a preview or a PDF that the server
// cannot make (its font is missing or unreadable): 503, with the reason
// in the log only, since it names the server's files.
func (a *Agent) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	a.log.Error("report: cannot render", "path", r.URL.Path, "err", err)
	server.WriteError(w, http.StatusServiceUnavailable, "render_unavailable", "this server cannot draw previews or PDFs just now; its log says why")
}

// readUpload reads the multipart field "file" of r, at most MaxUpload
// bytes, and tells its kind by its content: the status, code and error
// of a refusal otherwise. The form is read as a stream: the file is held
// once, in memory, and nothing is written to disk; other fields are
// skipped, at most maxFormParts of them.
func readUpload(r *http.Request) (Upload, int, string, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, MaxUpload+1<<20) // the file and the form around it
	tooLarge := func() (Upload, int, string, error) {
		return Upload{}, http.StatusRequestEntityTooLarge, "too_large", fmt.Errorf("the upload is larger than %d MiB", MaxUpload>>20)
	}
	malformed := func(err error) (Upload, int, string, error) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return Upload{}, http.StatusBadRequest, "bad_form", fmt.Errorf("the form is not well formed multipart/form-data: %s", formProblem(err))
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return Upload{}, http.StatusUnsupportedMediaType, "not_multipart", errors.New(`send the file as multipart/form-data in the field "file"`)
	}
	for range maxFormParts {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return Upload{}, http.StatusBadRequest, "no_file", errors.New(`the form has no field "file"`)
		}
		if err != nil {
			return malformed(err)
		}
		if part.FormName() != "file" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return malformed(err)
			}
			continue
		}
		data, err := io.ReadAll(io.LimitReader(part, MaxUpload+1))
		if err != nil {
			return malformed(err)
		}
		if len(data) > MaxUpload {
			return tooLarge()
		}
		kind := DetectKind(data)
		if kind == "" {
			return Upload{}, http.StatusUnsupportedMediaType, "unsupported_type", errors.New("the file is not a PNG or JPEG image, an XLSX workbook, a PDF or a JRXML template")
		}
		if status, code, err := checkUpload(kind, data); err != nil {
			return Upload{}, status, code, err
		}
		return Upload{Name: uploadName(part.FileName(), kind), Kind: kind, Size: len(data), Data: data}, 0, "", nil
	}
	return Upload{}, http.StatusBadRequest, "bad_form", fmt.Errorf(`the form has more than %d fields before the field "file"`, maxFormParts)
}

// checkUpload refuses, before anything is stored, a file that can be
// judged cheaply: a template that jrxml.Parse refuses (a DOCTYPE or
// entity, an XInclude, a foreign schema location, past its size caps),
// and a picture whose header cannot be read or that would take too much
// memory decoded, and a DOCX document whose text does not unzip within
// its limit. Workbooks and PDFs are bounded where they are read.
func checkUpload(kind string, data []byte) (int, string, error) {
	switch kind {
	case KindJRXML:
		_, err := jrxml.Parse(data)
		var p *jrxml.Problem
		switch {
		case err == nil:
			return 0, "", nil
		case errors.As(err, &p) && p.Check == "limit":
			return http.StatusRequestEntityTooLarge, "too_large", fmt.Errorf("the template cannot be used: line %s", p.Error())
		case errors.As(err, &p):
			return http.StatusUnprocessableEntity, "bad_template", fmt.Errorf("the template cannot be used: line %s", p.Error())
		}
		return http.StatusUnprocessableEntity, "bad_template", errors.New("the template cannot be used: it is not well-formed XML")
	case KindDOCX:
		switch err := layout.CheckDOCX(data); {
		case errors.Is(err, layout.ErrDocumentTooLarge):
			return http.StatusRequestEntityTooLarge, "too_large", err
		case err != nil:
			return http.StatusUnprocessableEntity, "bad_document", errors.New("the document cannot be read: " + formProblem(err))
		}
	case kindImage:
		switch err := layout.CheckPicture(data); {
		case errors.Is(err, layout.ErrTooLarge):
			return http.StatusRequestEntityTooLarge, "too_large", err
		case err != nil:
			return http.StatusUnsupportedMediaType, "unsupported_type", errors.New("the file starts like a picture but cannot be read as one")
		}
	}
	return 0, "", nil
}

// maxFormParts bounds the fields of an upload's form.
const maxFormParts = 16

// formProblem says what is wrong with a form in the reader's words, when
// they are short and plain text (they are about the client's bytes).
func formProblem(err error) string {
	msg := err.Error()
	if len(msg) > 200 || !utf8.ValidString(msg) || strings.ContainsFunc(msg, unicode.IsControl) {
		return "it could not be read"
	}
	return msg
}

// uploadName is the name an upload is shown by: the last element of the
// name the client gave, without control characters, at most 128 bytes of
// UTF-8; "upload.KIND" when nothing is left.
func uploadName(name, kind string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.TrimSpace(name)
	for len(name) > 128 {
		_, n := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-n]
	}
	if name == "" || name == "." || name == ".." {
		return "upload." + kind
	}
	return name
}

// DetectKind tells an upload's kind by its content: KindImage, KindPDF,
// kindXLSX, KindDOCX, KindJRXML, or "" for anything else.
func DetectKind(data []byte) string {
	if k := detectLayoutKind(data); k != "" {
		return k
	}
	head := data[:min(len(data), 4096)]
	if bytes.Contains(head, []byte("<jasperReport")) {
		return KindJRXML
	}
	return ""
}

// ssim is the similarity threshold of the run ctx belongs to: its
// configuration's (see Settings), else the agent's.
func (a *Agent) ssim(ctx context.Context) float64 {
	set := Settings{SSIM: a.cfg.SSIM}
	if err := server.RunConfig(ctx, &set); err != nil || set.SSIM <= 0 {
		return a.cfg.SSIM
	}
	return set.SSIM
}
