package cabin

import (
	"time"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/tool"
)

// State is the cabin graph's state: one session, which is one Loom thread.
// The input fields (text, fill_slots, accept and the ids) start a turn;
// the first node takes them into the session and clears them.
type State struct {
	// Text is what the user says this turn.
	Text string `json:"text,omitempty"`
	// FillSlots are slot values given directly (the fill-slots endpoint).
	FillSlots map[string]string `json:"fill_slots,omitempty"`
	// Accept answers a pending confirmation directly: true confirms,
	// false declines.
	Accept *bool `json:"accept,omitempty"`
	// Reason says why, with Accept.
	Reason string `json:"reason,omitempty"`
	// SessionID, UserID, VehicleID and Channel say who is talking; they
	// are kept in the session.
	SessionID string `json:"session_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	VehicleID string `json:"vehicle_id,omitempty"`
	Channel   string `json:"channel,omitempty"`

	// Session is what the assistant remembers between turns.
	Session Session `json:"session"`
	// Reply is the answer to the latest turn.
	Reply Reply `json:"reply"`
	// Turn is what the current turn has found out; the graph's routes
	// choose by it.
	Turn Facts `json:"turn"`
}

// Answer is the value that resumes a session waiting for a slot or a
// confirmation: the next turn's text, slot values, or a direct yes or no.
// Its JSON holds a tool.ConfirmAnswer's: the answer to a Question's Tool.
type Answer struct {
	Text  string            `json:"text,omitempty"`
	Slots map[string]string `json:"slots,omitempty"`
	// Accept is a direct yes (true) or no (false) to a confirmation; the
	// web page's confirm card sends it.
	Accept *bool `json:"accept,omitempty"`
	// Note says why, with Accept, as the page's card and every consent
	// in Loom send it; a no's note is kept in the routing debug.
	Note string `json:"note,omitempty"`
}

// Session statuses. A finished workflow is completed when a step of it
// was done or nothing failed, and failed when steps failed and none was
// done (an order that cannot be cancelled, a car that did not answer).
const (
	statusIdle                = "idle"
	statusWaitingSlot         = "waiting_slot"
	statusWaitingConfirmation = "waiting_confirmation"
	statusCompleted           = "completed"
	statusFailed              = "failed"
	statusRejected            = "rejected"
	statusFallback            = "fallback"
	statusStopped             = "stopped"
	statusSocial              = "social"
	statusClarify             = "clarify"
)

// Reply types; TypeAck is the early line of a stream.
const (
	typeWorkflowResult  = "workflow_result"
	typeAskSlot         = "ask_slot"
	typeAskConfirmation = "ask_confirmation"
	typeClarify         = "clarify"
	typeReject          = "reject"
	typeFallback        = "fallback"
	typeText            = "text"
	typeAck             = "ack"
)

// Defaults for a turn that does not say.
const (
	defaultVehicle = "car-1"
	defaultUser    = demoUser
	defaultChannel = "api"
	historyLimit   = 10 // turns kept in Session.History
)

// Workflow kinds and step statuses.
const (
	workflowSingle      = "single"
	workflowSequence    = "sequence"
	workflowConditional = "conditional"

	stepPending   = "pending"
	stepDone      = "done"
	stepFailed    = "failed"
	stepSkipped   = "skipped"
	stepCancelled = "cancelled"

	pendingSlot         = "slot"
	pendingConfirmation = "confirmation"
)

// Session is the assistant's memory of a conversation.
type Session struct {
	ID        string `json:"session_id"`
	UserID    string `json:"user_id"`
	VehicleID string `json:"vehicle_id"`
	Channel   string `json:"channel"`
	// Locale is the language the session last spoke (zh-CN, en).
	Locale string `json:"locale,omitempty"`
	// Status is where the conversation stands (StatusIdle, …).
	Status string `json:"status"`
	// Intent and Slots are the current intent and its slots.
	Intent string            `json:"current_intent,omitempty"`
	Slots  map[string]string `json:"slots,omitempty"`
	// PendingSlots are the slots asked for, or ["confirmation"].
	PendingSlots []string `json:"pending_slots,omitempty"`
	// Workflow is the current or last workflow.
	Workflow *Workflow `json:"workflow,omitempty"`
	// Memory keeps the last value of every slot and result field seen
	// (context_memory), for follow-ups like "再低一点".
	Memory map[string]string `json:"context_memory,omitempty"`
	// Clarify are the intents a clarify question offered, and the text
	// that raised it.
	Clarify     []string `json:"clarify,omitempty"`
	ClarifyText string   `json:"clarify_text,omitempty"`
	// LastSocial is set when the last turn was small talk.
	LastSocial    bool   `json:"last_social,omitempty"`
	LastUserText  string `json:"last_user_text,omitempty"`
	LastAgentText string `json:"last_agent_text,omitempty"`
	// Turns counts the turns; History keeps the last ones.
	Turns   int          `json:"turns"`
	History []turnRecord `json:"history,omitempty"`
}

// turnRecord is one turn in a session's history.
type turnRecord struct {
	User   string    `json:"user"`
	Agent  string    `json:"agent"`
	Type   string    `json:"type"`
	Intent string    `json:"intent,omitempty"`
	At     time.Time `json:"at"`
}

// waiting reports whether the session waits for a slot or a
// confirmation.
func (s *Session) waiting() bool { return s.Workflow != nil && s.Workflow.Pending != nil }

// Workflow is a plan of steps.
type Workflow struct {
	// Kind is single, sequence or conditional.
	Kind string `json:"kind"`
	// Source is the planner that made it: single, template:ID, heuristic
	// or model.
	Source string `json:"source"`
	Steps  []Step `json:"steps"`
	// Pending is what the workflow waits for, if anything.
	Pending *Pending `json:"pending,omitempty"`
}

// Step is one action of a workflow.
type Step struct {
	ID                   string            `json:"step_id"`
	Intent               string            `json:"intent_id"`
	Label                string            `json:"label"`
	Plugin               string            `json:"plugin_id"`
	Action               string            `json:"action"`
	Risk                 string            `json:"risk,omitempty"`
	Status               string            `json:"status"`
	DependsOn            []string          `json:"depends_on,omitempty"`
	Slots                map[string]string `json:"slots,omitempty"`
	Condition            *Condition        `json:"condition,omitempty"`
	RequiresConfirmation bool              `json:"requires_confirmation,omitempty"`
	Confirmed            bool              `json:"confirmed,omitempty"`
	// Result is the tool's result once the step ran.
	Result *Result `json:"result,omitempty"`
	// Checked is what the action's check found before the step was put to
	// the user (the amount a refund gives back), for the question.
	Checked map[string]any `json:"checked,omitempty"`
	// Message is what the step's outcome said.
	Message string `json:"message,omitempty"`
	// Reported is set once a reply told the user the outcome.
	Reported bool `json:"reported,omitempty"`
}

// Condition tests a field of an earlier step's result data.
type Condition struct {
	Step     string   `json:"source_step"`
	Field    string   `json:"field"`
	Operator string   `json:"operator"`
	Value    []string `json:"value"`
}

// Pending is what a workflow waits for: slots of a step, or a yes.
type Pending struct {
	Step  string   `json:"step_id"`
	Kind  string   `json:"kind"` // slot or confirmation
	Slots []string `json:"slots,omitempty"`
	// Tool is the request to confirm the step's call, for a confirmation.
	Tool *tool.ConfirmRequest `json:"tool,omitempty"`
}

// Reply is the answer to one turn.
type Reply struct {
	// SessionID names the session (the Loom thread).
	SessionID string `json:"session_id"`
	// Type is the kind of answer: workflow_result, ask_slot,
	// ask_confirmation, clarify, reject, fallback or text.
	Type string `json:"type"`
	// Status is the session's status after the turn.
	Status string `json:"status"`
	// Message is what the assistant says.
	Message string `json:"message"`
	// Intent and Slots are the session's current intent and slots.
	Intent       string            `json:"intent,omitempty"`
	Slots        map[string]string `json:"slots,omitempty"`
	PendingSlots []string          `json:"pending_slots,omitempty"`
	// Workflow is the workflow the turn ran or waits in.
	Workflow *Workflow `json:"workflow,omitempty"`
	// Debug is how the turn was understood and routed.
	Debug Debug `json:"routing_debug"`
	// Latency is the per-stage time breakdown.
	Latency Latency `json:"latency"`
}

// Debug is the routing debug record of a turn.
type Debug struct {
	// Text is what was said; Rewritten and RewriteRule are set when a
	// rewrite rule completed it.
	Text        string `json:"text"`
	Rewritten   string `json:"rewritten,omitempty"`
	RewriteRule string `json:"rewrite_rule,omitempty"`
	// Corrected is the text understood, with near-miss words corrected
	// ("打开车创" → "打开车窗"); Spelling says what was changed.
	Corrected string   `json:"corrected,omitempty"`
	Spelling  []string `json:"spelling,omitempty"`
	DialogAct string   `json:"dialog_act,omitempty"`
	Stop      bool     `json:"stop,omitempty"`
	Social    string   `json:"social,omitempty"`
	// Continuation says how a turn answered what the session waited for.
	Continuation string `json:"continuation,omitempty"`
	// Route is the routing of the whole text: every stage's candidates,
	// the fused ranking and the decision.
	Route *intent.Result `json:"route,omitempty"`
	// Clauses are the clauses of a multi-intent text, each routed.
	Clauses []clauseRoute `json:"clauses,omitempty"`
	// ClauseKind is single, sequence or conditional.
	ClauseKind string `json:"clause_kind,omitempty"`
	// Planner is what the planner did, when it ran.
	Planner *plannerDebug `json:"planner,omitempty"`
	// Polarity says what the polarity guard changed: an intent the words
	// contradicted turned to its opposite, or one in doubt asked about.
	Polarity []string `json:"polarity,omitempty"`
	// Decision and DecisionReason are what the turn did and why.
	Decision       string `json:"decision"`
	DecisionReason string `json:"decision_reason,omitempty"`
}

// clauseRoute is one clause of a multi-intent text, routed on its own.
type clauseRoute struct {
	Text     string          `json:"text"`
	Intent   string          `json:"intent,omitempty"`
	Decision intent.Decision `json:"decision"`
	Score    float64         `json:"score"`
}

// plannerDebug records the planner's work on a turn.
type plannerDebug struct {
	// Trigger says why the planner ran.
	Trigger string `json:"trigger"`
	// Backend is the planner that answered: template:ID, heuristic, model,
	// or model-fallback when the model failed.
	Backend  string `json:"backend"`
	Accepted bool   `json:"accepted"`
	Kind     string `json:"kind,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Latency is the time each stage of a turn took, in milliseconds.
type Latency struct {
	SessionGetOrCreate float64            `json:"session_get_or_create_ms"`
	DialogAct          float64            `json:"dialog_act_ms"`
	StopCheck          float64            `json:"stop_check_ms"`
	SocialRoute        float64            `json:"social_route_ms"`
	Rewrite            float64            `json:"rewrite_ms"`
	Route              float64            `json:"route_ms"`
	MatchPipeline      float64            `json:"match_pipeline_ms"`
	Stages             map[string]float64 `json:"stages_ms,omitempty"`
	Clauses            float64            `json:"clauses_ms"`
	Planner            float64            `json:"planner_ms"`
	DecisionResponse   float64            `json:"decision_response_ms"`
	SlotExtract        float64            `json:"slot_extract_ms"`
	Tools              float64            `json:"plugin_ms"` // the tool calls; the API's name is older
	ResponseBuild      float64            `json:"response_build_ms"`
	RecordTurn         float64            `json:"record_turn_ms"`
	SessionSave        float64            `json:"session_save_ms"`
	FirstResponse      float64            `json:"first_response_latency_ms"`
	Total              float64            `json:"total_latency_ms"`
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
