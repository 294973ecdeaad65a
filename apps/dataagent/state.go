package dataagent

import (
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/llm"
)

// State is a conversation with the analyst: a thread. Every key the
// graph's nodes and routes read is a field here; a run's input (Input)
// is decoded over it. It round-trips through JSON, as every checkpoint
// stores it.
type State struct {
	// Question is a run's input: the user's message. It is consumed by
	// intent_recognition, which moves it to Query.
	Question string `json:"question,omitempty"`
	// Source names the data source (default: the first).
	Source string `json:"source,omitempty"`
	// HumanReview asks for the plan to be approved before it runs.
	HumanReview bool `json:"human_review,omitempty"`
	// NL2SQLOnly answers with the SQL and its result, without a report.
	NL2SQLOnly bool `json:"nl2sql_only,omitempty"`

	// History is the thread's earlier questions and answers (one user and
	// one assistant message a turn), kept whole; Context is the model's
	// compressed view of it for the current turn, Summary its cache.
	History []llm.Message `json:"history,omitempty"`
	Context string        `json:"multi_turn_context,omitempty"`
	Summary convo.Summary `json:"history_summary"`

	// Query is the current turn's question.
	Query string `json:"query,omitempty"`
	// ModelDown says the model could not be reached at the start of the
	// turn: the turn goes on as without a model (a stored example may
	// answer).
	ModelDown bool `json:"model_down,omitempty"`
	// Intent is intent_recognition's decision.
	Intent *IntentDecision `json:"intent,omitempty"`
	// Evidence is the knowledge recalled for the question.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Example is the stored question → SQL example that matches the
	// question above the threshold, if one does.
	Example *Evidence `json:"example,omitempty"`
	// Enhanced is query_enhance's rewrite of the question.
	Enhanced *EnhancedQuery `json:"query_enhance,omitempty"`
	// Tables are the tables schema_recall found; SchemaText describes
	// them for the model (with business names and sample values), packed
	// to the schema budget.
	Tables     []datasource.Table `json:"tables,omitempty"`
	SchemaText string             `json:"schema_text,omitempty"`
	// Relations are the joins between the tables (table_relation);
	// RelationError why describing them failed last (the graph's budget
	// relation_retries counts the tries).
	Relations     []Relation `json:"table_relations,omitempty"`
	RelationError string     `json:"table_relation_error,omitempty"`
	// Feasibility is feasibility_assessment's decision.
	Feasibility *FeasibilityDecision `json:"feasibility,omitempty"`

	// Plan is the planner's plan; PlanValid and PlanError what
	// plan_executor's validation found (the graph's budget plan_repairs
	// counts the repairs).
	Plan        *Plan  `json:"plan,omitempty"`
	PlanChecked bool   `json:"plan_checked,omitempty"`
	PlanValid   bool   `json:"plan_valid,omitempty"`
	PlanError   string `json:"plan_error,omitempty"`
	// Step is the index of the plan step to run next.
	Step int `json:"plan_current_step"`

	// Feedback is the person's answer to the plan; Approved is set when
	// they accepted it (the graph's budget plan_rejections counts the
	// plans sent back).
	Feedback *Feedback `json:"human_feedback,omitempty"`
	Approved bool      `json:"plan_approved,omitempty"`

	// SQL is the statement sql_generate produced for the current step
	// ("" after a generation that gave none to check); SQLGiveUp that the
	// model said the step cannot be done in SQL; RetryReason why the next
	// generation is asked (the error); SQLErrors every failure of the
	// step, oldest first. The graph's budget sql_tries counts the tries.
	SQL         string   `json:"sql,omitempty"`
	SQLGiveUp   string   `json:"sql_give_up,omitempty"`
	RetryReason string   `json:"sql_regenerate_reason,omitempty"`
	SQLErrors   []string `json:"sql_errors,omitempty"`
	// Consistent is semantic_consistency's verdict on SQL; Objection
	// its reason when the check (the model) found the statement did not
	// do the step; Disputed that the writer then submitted the same
	// statement again, which is checked once more with the objection
	// shown (the check can be wrong), not counted as a repeat.
	Consistent bool   `json:"semantic_consistency,omitempty"`
	Objection  string `json:"semantic_objection,omitempty"`
	Disputed   bool   `json:"semantic_disputed,omitempty"`

	// Results are the results of the plan's SQL steps, in order.
	Results []StepResult `json:"results,omitempty"`

	// Python is the code python_generate wrote for the current step;
	// PythonOK the last run's outcome; PythonFallback that the step goes
	// on without Python (no sandbox, or every try failed); PythonOutput
	// what the run printed or why it failed; PythonErrors every failure
	// of the step; PythonAnalysis python_analyze's reading of it. The
	// graph's budget python_tries counts the tries.
	Python         string   `json:"python_code,omitempty"`
	PythonOK       bool     `json:"python_ok,omitempty"`
	PythonFallback bool     `json:"python_fallback,omitempty"`
	PythonOutput   string   `json:"python_output,omitempty"`
	PythonErrors   []string `json:"python_errors,omitempty"`
	PythonAnalysis []string `json:"python_analysis,omitempty"`

	// Images are the PNG charts the turn's Python steps saved, which the
	// report shows.
	Images []Image `json:"python_images,omitempty"`

	// FallbackNote says why a Python step of the turn ran without Python;
	// the report says so.
	FallbackNote string `json:"python_fallback_note,omitempty"`

	// Answer is the turn's answer.
	Answer *Answer `json:"answer,omitempty"`
}

// Image is a PNG chart a Python step saved.
type Image struct {
	Step int    `json:"step"`
	Name string `json:"name"`
	PNG  []byte `json:"png"`
}

// IntentDecision is what the question is: a request to analyse data, or
// small talk (answered at once with Reply).
type IntentDecision struct {
	Kind  string `json:"kind" jsonschema:"enum=analysis,enum=chitchat,description=analysis: a question about data or a request to analyse it; chitchat: greetings\\, small talk\\, anything else"`
	Reply string `json:"reply,omitempty" jsonschema:"description=for chitchat\\, a short reply in the language of the question"`
}

// EnhancedQuery is the question rewritten to stand on its own (earlier
// turns resolved) and its variants for recall.
type EnhancedQuery struct {
	Canonical string   `json:"canonical_query" jsonschema:"description=the question rewritten to stand on its own\\, with references to earlier turns resolved; empty if there is no question"`
	Expanded  []string `json:"expanded_queries,omitempty" jsonschema:"description=two or three rephrasings with the business terms spelt out"`
}

// Relation is a join between two recalled tables.
type Relation struct {
	From    string `json:"from"` // table.column
	To      string `json:"to"`   // table.column
	Logical bool   `json:"logical,omitempty"`
}

// FeasibilityDecision says whether the data can answer the question.
type FeasibilityDecision struct {
	Kind   string `json:"kind" jsonschema:"enum=analysis,enum=not_analysis,description=analysis: the tables shown can answer it; not_analysis: they cannot\\, or it is not a data question"`
	Reason string `json:"reason,omitempty" jsonschema:"description=why\\, in one sentence"`
	Reply  string `json:"reply,omitempty" jsonschema:"description=for not_analysis\\, what to tell the user\\, in the language of the question"`
}

// Plan is the planner's plan: steps run in order.
type Plan struct {
	Thought string `json:"thought,omitempty" jsonschema:"description=how the steps answer the question"`
	Steps   []Step `json:"steps" jsonschema:"minItems=1"`
}

// Step is one step of a plan.
type Step struct {
	Tool        string `json:"tool" jsonschema:"enum=sql,enum=python,enum=report,description=sql: one query; python: analyse the results of the sql steps before it; report: write the report (last)"`
	Instruction string `json:"instruction" jsonschema:"description=what the step must produce"`
}

// Feedback is a person's answer to a plan: accept it, or reject it with a
// note on what to change.
type Feedback struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note,omitempty"`
}

// PlanReview is what the run asks a person when the plan waits for
// approval.
type PlanReview struct {
	// Summary is the plan in words, with what to answer.
	Summary  string `json:"summary"`
	Question string `json:"question"`
	Plan     *Plan  `json:"plan"`
}

// StepResult is the result of a SQL step.
type StepResult struct {
	Step        int      `json:"step"`
	Instruction string   `json:"instruction"`
	SQL         string   `json:"sql"`
	Columns     []string `json:"columns"`
	Rows        [][]any  `json:"rows"`
	Truncated   bool     `json:"truncated,omitempty"`
}

// Answer is what a turn answers.
type Answer struct {
	// Text is the answer in a few sentences, or why there is none.
	Text string `json:"text"`
	// Report is the report in Markdown with chart blocks ("" in
	// nl2sql_only mode and for answers without data).
	Report string `json:"report,omitempty"`
	// ReportPath is where the report is served as an HTML page.
	ReportPath string `json:"report_path,omitempty"`
	// SQL, Columns and Rows are the last SQL step and its result.
	SQL       string   `json:"sql,omitempty"`
	Columns   []string `json:"columns,omitempty"`
	Rows      [][]any  `json:"rows,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	// FromExample names the stored question whose SQL answered, when
	// there was no model.
	FromExample string `json:"from_example,omitempty"`
	// Fallback says Python analysis did not run and why.
	Fallback string `json:"python_fallback,omitempty"`
	// Failed marks an answer that ends the run without a result.
	Failed bool `json:"failed,omitempty"`
}
