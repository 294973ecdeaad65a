package report

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/apps/report/xsd"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
)

// agentName is the name the report designer is registered under.
const agentName = "report"

// Defaults of Config.
const (
	// DefaultMaxRetry bounds the correction loop: corrections count 1
	// each, 2 when one changes nothing.
	DefaultMaxRetry = 5
	// DefaultSSIM is the similarity a rendering must reach against the
	// uploaded image to pass validation, measured over the form's ink
	// (compare.Form), each region of a 3×3 grid at least half of it.
	// Calibrated on the invoice form of the tests: the toolkit's skeleton
	// scores 0.69 (its weakest region 0.24, where sample values stand for
	// the form's), the skeleton without its table 0.15, a blank page 0.09.
	DefaultSSIM = 0.35
	// maxContinuations is how often a generation cut at the model's length
	// limit is continued.
	maxContinuations = 3
	// maxCountChange is how much a refined window may change its element
	// count before it is rolled back.
	maxCountChange = 0.10
)

// layouts reads the layout of an uploaded form and drafts a template
// from it without a model: the toolkit's OCR, spreadsheet and PDF readers
// and its skeleton builder.
type layouts interface {
	// Read reads the layout of data, an image (PNG or JPEG), an XLSX
	// workbook or a PDF as kind says.
	Read(ctx context.Context, kind string, data []byte) (*Layout, error)
}

// Config configures the agent.
type Config struct {
	// Model is the language model; nil works without one (create from an
	// upload, undo, reset, preview, export and validation).
	Model llm.Model
	// Store keeps uploads, versions and the error knowledge base; nil
	// keeps them in memory.
	Store Store
	// Layouts reads uploaded forms; nil refuses images, spreadsheets and
	// PDFs with a message.
	Layouts layouts
	// Schema validates templates against the JasperReports schemas when
	// set (see xsd.SchemasFromEnv).
	Schema *xsd.Validator
	// Templates is the knowledge base of templates and fields retrieve
	// searches; nil has none.
	Templates *Knowledge
	// Intents configures the local intent engine; zero uses the embedded
	// configuration.
	Intents *intent.Config
	// MaxRetry bounds the correction loop (default DefaultMaxRetry).
	MaxRetry int
	// SSIM is the threshold for the comparison with an uploaded image
	// (default DefaultSSIM).
	SSIM float64
	// ContextTokens is the model's context window in tokens (default
	// defaultContextTokens): the conversation and context sent to it are
	// counted against it, older turns summarised and a template too long
	// for it sent in windows.
	ContextTokens int
	// Convo shapes the model's view of the conversation; its MaxTokens
	// defaults to the prompt budget of ContextTokens.
	Convo convo.Config
	// Font is the TrueType font previews and PDFs are drawn with
	// (default render.DefaultFont).
	Font string
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Agent is the report designer: a graph over State with what its nodes
// need.
type Agent struct {
	cfg     Config
	model   llm.Model
	store   Store
	engine  *intent.Engine
	view    *convo.Builder
	counter convo.Counter
	saver   checkpoint.Saver
	log     *slog.Logger
	raster  rasterizer
	errorKB *Knowledge
}

// New makes the agent: it trains the intent engine and loads the error
// knowledge base from the store.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	if cfg.MaxRetry <= 0 {
		cfg.MaxRetry = DefaultMaxRetry
	}
	if cfg.SSIM <= 0 {
		cfg.SSIM = DefaultSSIM
	}
	if cfg.ContextTokens <= 0 {
		cfg.ContextTokens = defaultContextTokens
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Font == "" {
		cfg.Font = render.DefaultFont
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	icfg := cfg.Intents
	if icfg == nil {
		c, err := defaultIntents()
		if err != nil {
			return nil, err
		}
		icfg = &c
	}
	eng, err := intent.New(ctx, *icfg, intent.WithLogger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("report: training the intent engine: %w", err)
	}
	a := &Agent{cfg: cfg, model: cfg.Model, store: cfg.Store, engine: eng, log: cfg.Logger, raster: rasterizer{font: cfg.Font}}
	a.view = convo.New(a.viewConfig(cfg.Convo))
	if a.counter = cfg.Convo.Counter; a.counter == nil {
		enc := cmp.Or(cfg.Convo.Encoding, "cl100k_base")
		if a.counter, err = convo.Tiktoken(enc); err != nil {
			a.log.Warn("report: tiktoken unavailable, estimating tokens", "encoding", enc, "err", err)
			a.counter = convo.Estimate{}
		}
	}
	if a.errorKB, err = loadErrorKB(ctx, cfg.Store); err != nil {
		return nil, err
	}
	return a, nil
}

// Node names, as the design notes name them.
const (
	nodeInput    = "process_input"
	nodeClassify = "classify_intent"
	nodeRetrieve = "retrieve"
	nodeGenerate = "generate"
	nodeSkeleton = "generate_skeleton"
	nodeRefine   = "refine_layout"
	nodeMap      = "map_fields"
	nodeModify   = "modify_jrxml"
	nodeConsult  = "handle_consult"
	nodeUndo     = "handle_undo"
	nodeReset    = "handle_reset"
	nodeSave     = "save_session"
	nodeValidate = "validate"
	nodeExplain  = "explain_error"
	nodeCorrect  = "correct_jrxml"
	nodeFinalize = "finalize"
)

// Graph returns the agent's graph. Compile it with the saver its threads
// live on; undo reads their history there.
func (a *Agent) Graph() *graph.Graph[State] {
	g := graph.New[State](agentName)
	g.Node(nodeInput, a.processInput)
	g.Node(nodeClassify, a.classifyIntent)
	g.Node(nodeRetrieve, a.retrieve)
	g.Node(nodeGenerate, a.generate)
	g.Node(nodeSkeleton, a.generateSkeleton)
	g.Node(nodeRefine, a.refineLayout())
	g.Node(nodeMap, a.mapFields)
	g.Node(nodeModify, a.modify)
	g.Node(nodeConsult, a.consult)
	g.Node(nodeUndo, a.undo)
	g.Node(nodeReset, a.reset)
	g.Node(nodeSave, a.saveSession)
	g.Node(nodeValidate, a.validate)
	g.Node(nodeExplain, a.explainError)
	g.Node(nodeCorrect, a.correct)
	g.Node(nodeFinalize, a.finalize)

	g.Edge(graph.Start, nodeInput)
	g.Edge(nodeInput, nodeClassify)
	// R1: by intent; an unknown one modifies the current template, or
	// makes a new one when there is none; a turn that asked which was
	// meant, or whose new report the user declined, ends.
	g.Route(nodeClassify, routeByIntent, nodeRetrieve, nodeModify, nodeSave, nodeConsult, nodeUndo, nodeReset, nodeFinalize)
	// R2: the three-stage path when the upload gave a layout with rows.
	g.Route(nodeRetrieve, routeAfterRetrieve, nodeSkeleton, nodeGenerate)
	g.Edge(nodeGenerate, nodeSave) // R3
	g.Edge(nodeSkeleton, nodeRefine)
	g.Edge(nodeRefine, nodeMap)
	g.Edge(nodeMap, nodeSave)    // R3
	g.Edge(nodeModify, nodeSave) // R4
	g.Edge(nodeUndo, nodeSave)   // R5
	// R6: preview and export skip validation.
	g.Route(nodeSave, routeAfterSave, nodeValidate, nodeFinalize)
	// R7: pass or explain; a failure once the retries are spent ends the
	// turn (the budget's check on validate → explain).
	g.Route(nodeValidate, routeAfterValidate, nodeFinalize, nodeExplain)
	g.Edge(nodeExplain, nodeCorrect) // R8
	// R9: a correction is validated while the retries pay for it, the
	// last one too; one that changed nothing costs two.
	g.Edge(nodeCorrect, nodeValidate)
	g.Budget(budgetRetries, a.cfg.MaxRetry, nodeFinalize).
		Count(nodeValidate, nodeExplain, 0).
		CountBy(nodeCorrect, nodeValidate, a.correctionCost)
	g.Edge(nodeConsult, nodeFinalize)
	g.Edge(nodeReset, nodeFinalize)
	g.Edge(nodeFinalize, graph.End)
	return g
}

// Compile compiles the agent's graph on saver (nil: in memory, with no
// undo across turns).
func (a *Agent) Compile(saver checkpoint.Saver) (*graph.Compiled[State], error) {
	a.saver = saver
	var opts []graph.CompileOption
	if saver != nil {
		opts = append(opts, graph.WithSaver(saver))
	}
	c, err := a.Graph().Compile(opts...)
	if err != nil {
		return nil, fmt.Errorf("report: compiling the graph: %w", err)
	}
	return c, nil
}

// routeByIntent is R1.
func routeByIntent(s State) string {
	if s.Turn.By == byClarify || s.Turn.By == byDeclined {
		return nodeFinalize
	}
	switch s.Turn.Intent {
	case intentGenerate:
		return nodeRetrieve
	case IntentModify:
		return nodeModify
	case intentPreview, intentPDF, intentJRXML:
		return nodeSave
	case intentConsult:
		return nodeConsult
	case IntentUndo:
		return nodeUndo
	case intentReset:
		return nodeReset
	}
	if s.JRXML != "" {
		return nodeModify
	}
	return nodeRetrieve
}

// routeAfterRetrieve is R2.
func routeAfterRetrieve(s State) string {
	if s.Layout != nil && s.Layout.TotalRows > 0 {
		return nodeSkeleton
	}
	return nodeGenerate
}

// routeAfterSave is R6: preview and export skip validation, and so does
// a turn with no template to check or that changed nothing.
func routeAfterSave(s State) string {
	switch {
	case s.Turn.Intent == intentPreview || s.Turn.Intent == intentPDF || s.Turn.Intent == intentJRXML:
		return nodeFinalize
	case s.JRXML == "" || s.Turn.Unchanged:
		return nodeFinalize
	}
	return nodeValidate
}

// routeAfterValidate is R7: a pass ends the turn; a failure is explained
// and corrected while the retries last (the budget sends the run to
// finalize once they are spent).
func routeAfterValidate(s State) string {
	if s.Turn.Status == statusPass {
		return nodeFinalize
	}
	return nodeExplain
}

// budgetRetries is the correction loop's budget: MaxRetry units.
const budgetRetries = "retries"

// correctionCost is what a correction spends of the retries: 1, 2 for
// one that changed nothing (so a fix that arrives last is still
// validated, and a model that repeats itself stops sooner), and more
// than all of them without a model, which ends the loop.
func (a *Agent) correctionCost(s State) int {
	switch {
	case a.model == nil:
		return a.cfg.MaxRetry + 1
	case s.Turn.Unfixed:
		return 2
	}
	return 1
}

// retries returns how much of the retries the turn's corrections spent,
// and their bound for the run: MaxRetry, or less when the run lowered it
// (a server run's max_retry).
func (a *Agent) retries(ctx context.Context) (spent, bound int) {
	left, ok := graph.Left(ctx, budgetRetries)
	if !ok {
		return 0, a.cfg.MaxRetry
	}
	bound, _ = graph.Bound(ctx, budgetRetries)
	return bound - left, bound
}

const (
	statusPass = "pass"
	statusFail = "fail"
)
