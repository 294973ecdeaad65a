package report

import (
	"encoding/json"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/llm"
)

// The eight intents of the designer.
const (
	intentGenerate = "initial_generation"
	IntentModify   = "modify_report"
	intentPreview  = "preview_report"
	intentPDF      = "export_pdf"
	intentJRXML    = "export_jrxml"
	intentConsult  = "consult_question"
	IntentUndo     = "undo_modification"
	intentReset    = "reset_session"
)

// knownIntents lists the eight intents in the order the configuration
// gives them.
var knownIntents = []string{intentGenerate, IntentModify, intentPreview, intentPDF, intentJRXML, intentConsult, IntentUndo, intentReset}

// Input is a run's input, decoded over State: the user's message and,
// optionally, a file uploaded to the thread before the run.
type Input struct {
	Message string `json:"message,omitempty" jsonschema:"description=what the user asks\\, e.g. 帮我生成一个销售报表 or make the title bigger"`
	Upload  string `json:"upload,omitempty" jsonschema:"description=the id of a file uploaded to the thread (POST /api/v1/report/threads/{id}/uploads) to design from"`
}

// State is a design conversation: a thread. It round-trips through JSON,
// as every checkpoint stores it.
type State struct {
	// Message and Upload are a run's input; process_input consumes them.
	Message string `json:"message,omitempty"`
	Upload  string `json:"upload,omitempty"`

	// Title names the conversation: its first message. Reset keeps it.
	Title string `json:"title,omitempty"`
	// History is the whole conversation, kept for display; Summary is the
	// cached summary of its older part, for the model's view.
	History []llm.Message `json:"history,omitempty"`
	Summary convo.Summary `json:"summary"`

	// Turn is this turn's work.
	Turn Turn `json:"turn"`

	// Design is what is being designed: undo restores it, reset clears it.
	Design
	// Revision counts the changes of the design on this line of history;
	// undo goes back to the newest finished turn with the revision before.
	Revision int `json:"revision"`
	// Saved is a hash of the template as save_session last saw it.
	Saved string `json:"saved,omitempty"`
	// Version is the number of the last version recorded.
	Version int `json:"version,omitempty"`
	// Versioned is a hash of the template of that version: a turn that
	// leaves the template as it is records no new one.
	Versioned string `json:"versioned,omitempty"`
	// PendingFailure is what the last failed correction loop left: the
	// next message carries it into the model's prompt.
	PendingFailure *FailureContext `json:"pending_failure_context,omitempty"`
}

// Design is the template under design and what it was made from.
type Design struct {
	// JRXML is the current template.
	JRXML string `json:"current_jrxml,omitempty"`
	// Final is the last template that passed validation.
	Final string `json:"final_jrxml,omitempty"`
	// Layout is the layout read from the uploaded image, spreadsheet or
	// PDF, when there was one.
	Layout *Layout `json:"layout_schema,omitempty"`
	// Source is the upload the design was made from (its id and kind):
	// an image is compared with the rendering in validation.
	Source *uploadRef `json:"source,omitempty"`
	// Template is an uploaded JRXML template to start from.
	Template string `json:"uploaded_template_jrxml,omitempty"`
}

// Turn is the work of one turn: its intent, the checks, the corrections
// and the reply. process_input clears it.
type Turn struct {
	// Text is the user's message of this turn; Uploaded says a file came
	// with it.
	Text     string `json:"text,omitempty"`
	Uploaded bool   `json:"uploaded,omitempty"`
	Intent   string `json:"intent,omitempty"`
	// By says who decided the intent: local, model, upload or fallback.
	By string `json:"by,omitempty"`
	// Carry is the failure context of the previous turn, carried into
	// this turn's prompts.
	Carry *FailureContext `json:"carry,omitempty"`
	// Retrieved is what retrieve found: similar templates, fields and past
	// corrections, as text for the prompt.
	Retrieved string `json:"retrieved_context,omitempty"`
	// KBTemplate is the template of the knowledge base closest to the
	// request; KBFields the field definitions found.
	KBTemplate string   `json:"kb_template,omitempty"`
	KBFields   []string `json:"kb_fields,omitempty"`
	// Status is pass or fail after validate.
	Status   string          `json:"status,omitempty"`
	Problems []jrxml.Problem `json:"problems,omitempty"`
	// SSIM is the rendering's similarity to the uploaded image (0 when
	// there is none).
	SSIM float64 `json:"ssim,omitempty"`
	// Explanation is explain_error's account of the problems.
	Explanation string `json:"natural_explanation,omitempty"`
	// Corrections is how many corrections ran (the retries they spent
	// are the graph's budget "retries").
	Corrections int `json:"corrections,omitempty"`
	// Unfixed says the last correction returned no changed template.
	Unfixed bool `json:"last_correction_unchanged,omitempty"`
	// LastError is the last correction: what was wrong and what fixed it.
	LastError *errorCase `json:"last_error_case,omitempty"`
	// Windows and RolledBack count refine_layout's windows and those
	// rolled back for changing their element count too much.
	Windows    int `json:"windows,omitempty"`
	RolledBack int `json:"rolled_back,omitempty"`
	// NeedsModel is set when the turn could not be done without a model.
	NeedsModel bool `json:"needs_model,omitempty"`
	// Unchanged is set when the turn left the template as it was (an undo
	// with nothing to undo): it is neither checked again nor a version.
	Unchanged bool `json:"unchanged,omitempty"`
	// Reply is what the agent says to the user.
	Reply string `json:"reply,omitempty"`
	// Zh says the user writes Chinese, so the reply is in Chinese.
	Zh bool `json:"zh,omitempty"`
}

// Layout is the layout of an uploaded form: the layout schema as the
// toolkit reads it, with what the agent needs of it.
type Layout struct {
	// Kind is image, xlsx, pdf or docx.
	Kind string `json:"kind"`
	// TotalRows is the number of rows found; the three-stage path runs
	// when it is above zero.
	TotalRows int `json:"total_rows"`
	// Labels are the form's labels in reading order: the names map_fields
	// gives the skeleton's $F{field_N}, N counted from 1.
	Labels []string `json:"labels,omitempty"`
	// Schema is the toolkit's layout schema as JSON.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Skeleton is the template the toolkit drafts from the layout.
	Skeleton string `json:"skeleton,omitempty"`
	// Rows are the values the form holds, as data rows by field name:
	// previews show them instead of made-up values.
	Rows []map[string]any `json:"rows,omitempty"`
}

// uploadRef names an uploaded file.
type uploadRef struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

// FailureContext is what a correction loop that gave up leaves for the
// next turn.
type FailureContext struct {
	Error string `json:"error_msg"`
	// JRXML is the template that did not pass.
	JRXML string `json:"bad_jrxml,omitempty"`
	// Retry is how much of the retries budget the corrections spent.
	Retry int `json:"retry_count"`
	// Corrections is how many corrections ran.
	Corrections int `json:"corrections,omitempty"`
}

// errorCase is one correction: the error and the fix, for the error
// knowledge base.
type errorCase struct {
	Error string `json:"error"`
	Fix   string `json:"fix"`
}

// say picks the reply in the user's language.
func (t *Turn) say(en, zh string) string {
	if t.Zh {
		return zh
	}
	return en
}
