package dataagent

import (
	"log/slog"

	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
)

// AgentName is the name the agent is registered under.
const AgentName = "dataagent"

// The graph's nodes, named as the analyst's steps.
const (
	NodeIntent      = "intent_recognition"
	NodeEvidence    = "evidence_recall"
	NodeEnhance     = "query_enhance"
	NodeSchema      = "schema_recall"
	NodeRelation    = "table_relation"
	NodeFeasibility = "feasibility_assessment"
	NodePlanner     = "planner"
	NodeExecutor    = "plan_executor"
	NodeFeedback    = "human_feedback"
	NodeSQLGenerate = "sql_generate"
	NodeSemantic    = "semantic_consistency"
	NodeSQLExecute  = "sql_execute"
	NodePyGenerate  = "python_generate"
	NodePyExecute   = "python_execute"
	NodePyAnalyze   = "python_analyze"
	NodeReport      = "report_generator"
	// NodeGiveUp ends a turn whose retries were spent, saying why.
	NodeGiveUp = "give_up"
)

// Bounds of the graph's loops.
const (
	// RelationTries is how many times table_relation runs before a
	// retryable error ends the turn (the budget relation_retries).
	RelationTries = 3
	// PlanRepairs is how many times the planner repairs a plan that does
	// not validate; one more failure ends the run.
	PlanRepairs = 2
	// SQLTries is how many SQL statements one step may generate (the
	// budget sql_tries).
	SQLTries = 10
	// MaxSteps bounds a plan's steps.
	MaxSteps = 8
	// MaxRejections bounds how often a person may send a plan back in
	// one run.
	MaxRejections = 5
	// DefaultPythonTries is how many Python runs a step may take before
	// it falls back to analysing without Python.
	DefaultPythonTries = 3
	// DefaultMatch is how close a question must be to a stored example's
	// (0 to 1) for the example's SQL to answer it without a model.
	DefaultMatch = 0.6
	// DefaultSchemaBudget is the tokens of schema sent to the model.
	DefaultSchemaBudget = 3000
)

// Config configures the agent.
type Config struct {
	// Sources are the data sources, in order (the first is the default).
	Sources []Source
	// Model is the language model; nil answers only questions that match
	// a stored example and says which variables configure a model.
	Model llm.Model
	// Knowledge is the recall over business knowledge; nil recalls none.
	Knowledge Knowledge
	// Schema finds the tables a question needs; nil uses every table of
	// the source, packed to SchemaBudget.
	Schema SchemaRecaller
	// Report draws the reports' charts and pages; nil writes reports
	// without charts.
	Report Renderer
	// Python runs analysis code; nil analyses without Python (fallback).
	Python PythonRunner
	// PythonTries is how many failed Python runs a step takes before the
	// fallback (default 3).
	PythonTries int
	// StrictPython ends the run when Python fails PythonTries times,
	// instead of going on without it.
	StrictPython bool
	// Match is the threshold for answering from a stored example without
	// a model (default 0.6).
	Match float64
	// SchemaBudget is the tokens of schema sent to the model (default
	// 3000).
	SchemaBudget int
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Source is one data source of the agent: its name, what it is about, and
// the guarded connection every statement goes through.
type Source struct {
	Name        string
	Description string
	*datasource.Source
}

// Agent is the data analyst: its configuration and graph.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	history *convo.Builder
}

// New returns the agent for cfg.
func New(cfg Config) *Agent {
	if cfg.PythonTries <= 0 {
		cfg.PythonTries = DefaultPythonTries
	}
	if cfg.Match <= 0 {
		cfg.Match = DefaultMatch
	}
	if cfg.SchemaBudget <= 0 {
		cfg.SchemaBudget = DefaultSchemaBudget
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Agent{cfg: cfg, log: log, history: convo.New(convo.Config{
		Window: 6, MaxChars: 3000, SummaryMaxChars: 1000,
		SummaryKey: "dataagent-1", Counter: convo.Estimate{},
	})}
}

// The graph's budgets: what the analyst's retries may spend in a run
// (each new question starts them again). When one is spent the run takes
// its exit, which the drawing shows.
const (
	// budgetRelation is table_relation's retries after a database error.
	budgetRelation = "relation_retries"
	// budgetRepairs is the planner's repairs of plans that do not validate.
	budgetRepairs = "plan_repairs"
	// budgetRejections is the plans a person may send back with a note.
	budgetRejections = "plan_rejections"
	// budgetSQL is the statements one SQL step may generate: the first,
	// and one for each failure (no usable answer, a repeat, a statement
	// the check or the database refused).
	budgetSQL = "sql_tries"
	// budgetPython is the Python runs one step may take.
	budgetPython = "python_tries"
	// budgetSteps is plan_executor's dispatches of a plan: one after the
	// approval and one after each step (a valid plan has at most
	// MaxSteps).
	budgetSteps = "plan_steps"
)

// Graph builds the analyst's graph. Every branch is a declared route and
// every retry spends a declared budget, whose exit is drawn:
//
//	intent_recognition → evidence_recall → query_enhance → schema_recall
//	  → table_relation (retried twice) → feasibility_assessment → planner
//	  → plan_executor ⇄ planner (2 repairs), human_feedback (approve/reject, 5 rejections)
//	  plan_executor → sql_generate (10 tries) → semantic_consistency → sql_execute → plan_executor
//	  plan_executor → python_generate → python_execute (retries, then fallback) → python_analyze → plan_executor
//	  plan_executor → report_generator → END
//	  a spent budget → give_up → END (Python's, in fallback mode, → python_analyze)
func (a *Agent) Graph() *graph.Graph[State] {
	g := graph.New[State](AgentName)
	g.Node(NodeIntent, a.intentRecognition).
		Node(NodeEvidence, a.evidenceRecall).
		Node(NodeEnhance, a.queryEnhance).
		Node(NodeSchema, a.schemaRecall).
		Node(NodeRelation, a.tableRelation).
		Node(NodeFeasibility, a.feasibilityAssessment).
		Node(NodePlanner, a.planner).
		Node(NodeExecutor, a.planExecutor).
		Node(NodeFeedback, a.humanFeedback).
		Node(NodeSQLGenerate, a.sqlGenerate).
		Node(NodeSemantic, a.semanticConsistency).
		Node(NodeSQLExecute, a.sqlExecute).
		Node(NodePyGenerate, a.pythonGenerate).
		Node(NodePyExecute, a.pythonExecute).
		Node(NodePyAnalyze, a.pythonAnalyze).
		Node(NodeReport, a.reportGenerator).
		Node(NodeGiveUp, a.giveUp)

	g.Edge(graph.Start, NodeIntent).
		Route(NodeIntent, routeIntent, NodeEvidence, graph.End).
		Edge(NodeEvidence, NodeEnhance).
		Route(NodeEnhance, routeEnhance, NodeSchema, graph.End).
		Route(NodeSchema, routeSchema, NodeRelation, graph.End).
		Route(NodeRelation, routeRelation, NodeRelation, NodeFeasibility, graph.End).
		Route(NodeFeasibility, routeFeasibility, NodePlanner, graph.End).
		Edge(NodePlanner, NodeExecutor).
		Route(NodeExecutor, a.routeExecutor, NodePlanner, NodeFeedback, NodeSQLGenerate, NodePyGenerate, NodeReport, graph.End).
		Route(NodeFeedback, routeFeedback, NodePlanner, NodeExecutor, graph.End).
		Route(NodeSQLGenerate, routeSQLGenerate, NodeSQLGenerate, NodeSemantic, graph.End).
		Route(NodeSemantic, routeSemantic, NodeSQLGenerate, NodeSQLExecute).
		Route(NodeSQLExecute, routeSQLExecute, NodeSQLGenerate, NodeExecutor).
		Edge(NodePyGenerate, NodePyExecute).
		Route(NodePyExecute, routePyExecute, NodePyGenerate, NodePyAnalyze).
		Edge(NodePyAnalyze, NodeExecutor).
		Edge(NodeReport, graph.End).
		Edge(NodeGiveUp, graph.End)

	g.Budget(budgetRelation, RelationTries-1, NodeGiveUp).
		Count(NodeRelation, NodeRelation, 1)
	g.Budget(budgetRepairs, PlanRepairs, NodeGiveUp).
		Count(NodeExecutor, NodePlanner, 1)
	g.Budget(budgetRejections, MaxRejections, NodeGiveUp).
		Count(NodeFeedback, NodePlanner, 1)
	// Entering sql_generate from plan_executor is a step's first try.
	g.Budget(budgetSQL, SQLTries, NodeGiveUp).
		Count(NodeSQLGenerate, NodeSQLGenerate, 1).
		Count(NodeSemantic, NodeSQLGenerate, 1).
		Count(NodeSQLExecute, NodeSQLGenerate, 1).
		ResetEntering(NodeSQLGenerate, 1)
	pyExit := NodePyAnalyze // the fallback: analysed without Python
	if a.cfg.StrictPython {
		pyExit = NodeGiveUp
	}
	// Entering python_generate from plan_executor is a step's first try.
	g.Budget(budgetPython, a.cfg.PythonTries, pyExit).
		Count(NodePyExecute, NodePyGenerate, 1).
		ResetEntering(NodePyGenerate, 1)
	// Only a plan that skipped validation has more steps: what was found
	// is reported.
	g.Budget(budgetSteps, MaxSteps+1, NodeReport).
		Count(NodeFeedback, NodeExecutor, 1).
		Count(NodeSQLExecute, NodeExecutor, 1).
		Count(NodePyAnalyze, NodeExecutor, 1).
		Reset(NodePlanner, NodeExecutor)
	return g
}

func routeIntent(s State) string {
	if s.Answer != nil || s.Intent == nil || s.Intent.Kind != "analysis" {
		return graph.End
	}
	return NodeEvidence
}

func routeEnhance(s State) string {
	if s.Answer != nil || s.Enhanced == nil || s.Enhanced.Canonical == "" {
		return graph.End
	}
	return NodeSchema
}

func routeSchema(s State) string {
	if len(s.Tables) == 0 {
		return graph.End
	}
	return NodeRelation
}

// routeRelation: an ended turn ends (a table that is gone); a database
// error tries again while the retries last; joins found go on.
func routeRelation(s State) string {
	switch {
	case s.Answer != nil:
		return graph.End
	case s.RelationError != "":
		return NodeRelation
	}
	return NodeFeasibility
}

func routeFeasibility(s State) string {
	if s.Feasibility != nil && s.Feasibility.Kind == "analysis" {
		return NodePlanner
	}
	return graph.End
}

// routeExecutor sends a checked plan on: an ended turn ends; an invalid
// plan goes back to the planner (while the repairs last); a plan that needs review waits for a person;
// then the current step's kind picks its node, and after the last step
// the report is written.
func (a *Agent) routeExecutor(s State) string {
	switch {
	case s.Answer != nil:
		return graph.End
	case !s.PlanValid:
		return NodePlanner
	case a.reviewNeeded(s):
		return NodeFeedback
	}
	switch s.step().Tool {
	case "sql":
		return NodeSQLGenerate
	case "python":
		return NodePyGenerate
	}
	// The report step, or the end of a plan without one.
	return NodeReport
}

func routeFeedback(s State) string {
	switch {
	case s.Approved:
		return NodeExecutor
	case s.Feedback != nil && !s.Feedback.Accept && s.Feedback.Note != "" && s.Answer == nil:
		return NodePlanner
	}
	return graph.End
}

// routeSQLGenerate: an ended turn ends; a try that gave no statement to
// check tries again (while the budget lasts); a statement is checked.
func routeSQLGenerate(s State) string {
	switch {
	case s.Answer != nil:
		return graph.End
	case s.SQL == "":
		return NodeSQLGenerate
	}
	return NodeSemantic
}

func routeSemantic(s State) string {
	if s.Consistent {
		return NodeSQLExecute
	}
	return NodeSQLGenerate
}

// routeSQLExecute: a statement whose result is recorded completes the
// step; one the database refused is written again.
func routeSQLExecute(s State) string {
	if s.ran() {
		return NodeExecutor
	}
	return NodeSQLGenerate
}

// routePyExecute: a run that worked, or a step without Python, is
// analysed; a failed run is written again while the retries last.
func routePyExecute(s State) string {
	if s.PythonOK || s.PythonFallback {
		return NodePyAnalyze
	}
	return NodePyGenerate
}
