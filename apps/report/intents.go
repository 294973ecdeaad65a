package report

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
)

//go:embed config/intents.yml
var configFS embed.FS

// defaultIntents returns the embedded configuration of the eight intents:
// keywords and examples in Chinese and English.
func defaultIntents() (intent.Config, error) {
	b, err := configFS.ReadFile("config/intents.yml")
	if err != nil {
		return intent.Config{}, fmt.Errorf("report: reading the intents: %w", err)
	}
	var c intent.Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return intent.Config{}, fmt.Errorf("report: reading the intents: %w", err)
	}
	return c, nil
}

// intentDecision is the model's choice of intent.
type intentDecision struct {
	Intent string `json:"intent" jsonschema:"enum=initial_generation,enum=modify_report,enum=preview_report,enum=export_pdf,enum=export_jrxml,enum=consult_question,enum=undo_modification,enum=reset_session,enum=unknown"`
}

// Routing bounds of the local engine, calibrated on the labelled
// utterances of testdata/utterances.tsv (TestRoutingSet).
const (
	// sureMargin is the lead the engine's top intent must have over the
	// second for the engine to decide alone; below it the model decides,
	// or, without one, the user is asked which was meant.
	sureMargin = 0.30
	// sureScore is the fused score the top intent must reach: the
	// classifier alone is sure of vague words ("嗯，这样那样弄一下" scores
	// 0.91 for a change), while the set's weakest right decision scores
	// above it.
	sureScore = 1.0
)

// Who decided a turn's intent (Turn.By).
const (
	byLocal    = "local"
	byModel    = "model"
	byUpload   = "upload"
	byFallback = "fallback"
	// byClarify: the engine was not sure and there is no model, so the
	// turn asks which was meant and changes nothing.
	byClarify = "clarify"
	// byConfirm: a new report over the current template waits for the
	// user's yes; byDeclined: the user said no.
	byConfirm  = "confirm"
	byDeclined = "declined"
)

// rewriteQuestion is the question asked before a new report replaces the
// current template.
type rewriteQuestion struct {
	// Kind is "confirm_rewrite".
	Kind string `json:"kind"`
	// Question is the question, in the user's language.
	Question string `json:"question"`
}

// rewriteAnswer is the answer to a RewriteQuestion.
type rewriteAnswer struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note,omitempty"`
}

// classifyIntent decides the turn's intent. A question is a consultation;
// the local engine decides what it is sure of; an upload with no other
// request means a new design; the model decides the rest, and without
// one the user is asked which was meant. A new report over the current
// template is made only once the user says yes.
func (a *Agent) classifyIntent(ctx context.Context, s State) (State, error) {
	if s.Turn.By != byConfirm { // not the re-run of the question below
		var err error
		if s, err = a.decideIntent(ctx, s); err != nil {
			return s, err
		}
	}
	// Asked only over a template in use: not after a fresh upload (it
	// replaced the design), nor when the last attempt failed validation
	// and the user asks again.
	if s.Turn.Intent != intentGenerate || s.JRXML == "" || s.Turn.Uploaded || s.Turn.Carry != nil {
		return s, nil
	}
	by := s.Turn.By
	if by == byConfirm { // resumed: who decided is not kept, the answer is
		by = byLocal
	}
	q := s.Turn.say("This makes a new report that replaces the current template (you can undo it afterwards). Go ahead?",
		"这会新建一个报表，替换当前的模板（之后可以撤销）。要继续吗？")
	s.Turn.By, s.Turn.Reply = byConfirm, q
	ans, err := graph.Ask[rewriteAnswer](ctx, rewriteQuestion{Kind: "confirm_rewrite", Question: q})
	if err != nil {
		return s, err
	}
	s.Turn.Reply = ""
	if !ans.Accept {
		s.Turn.Intent, s.Turn.By, s.Turn.Unchanged = "", byDeclined, true
		s.Turn.Reply = s.Turn.say("All right: the current template stays as it is.", "好的，当前模板保持不变。")
		return s, nil
	}
	s.Turn.By = by
	return s, nil
}

// decideIntent is classifyIntent without the confirmation.
func (a *Agent) decideIntent(ctx context.Context, s State) (State, error) {
	msg := strings.TrimSpace(s.Turn.Text)
	var r intent.Result
	if msg != "" {
		var err error
		if r, err = a.engine.Route(ctx, msg); err != nil {
			return s, fmt.Errorf("classifying the intent: %w", err)
		}
		if in, ok := sureIntent(r, msg, s.JRXML != ""); ok {
			s.Turn.Intent, s.Turn.By = in, byLocal
			return s, nil
		}
	}
	if s.Turn.Uploaded && (msg == "" || s.JRXML == "") {
		s.Turn.Intent, s.Turn.By = intentGenerate, byUpload
		return s, nil
	}
	if a.model != nil && msg != "" {
		d, err := a.askIntent(ctx, s, msg)
		if err != nil {
			return s, err
		}
		if slices.Contains(knownIntents, d.Intent) {
			s.Turn.Intent, s.Turn.By = d.Intent, byModel
			return s, nil
		}
	}
	if msg != "" && a.model == nil && !r.OutOfScope && r.Intent != "" {
		s.Turn.Intent, s.Turn.By, s.Turn.Unchanged = "", byClarify, true
		s.Turn.Reply = clarifyReply(s.Turn, r, s.JRXML != "")
		return s, nil
	}
	s.Turn.Intent, s.Turn.By = "", byFallback
	return s, nil
}

// sureIntent is the intent the local engine decides alone: a question
// (not a request put as one) is a consultation; otherwise the engine must
// execute with a lead of SureMargin, and a new report over an existing
// template must be asked for in so many words (a keyword).
func sureIntent(r intent.Result, msg string, hasTemplate bool) (string, bool) {
	if isQuestion(msg) && !isRequest(msg) {
		return intentConsult, true
	}
	if r.Decision != intent.Execute || !slices.Contains(knownIntents, r.Intent) || r.Margin < sureMargin || r.Score < sureScore {
		return "", false
	}
	if r.Intent != intentGenerate && r.Intent != intentConsult && r.Intent != intentReset && !hasTemplate {
		return "", false // a change or an export of nothing: the words meant something else
	}
	if r.Intent == intentGenerate && hasTemplate && r.MatchedStage != intent.StageKeyword && !asksNew(msg) {
		return "", false
	}
	return r.Intent, true
}

// intentWords name the intents to a user.
var intentWords = map[string][2]string{
	intentGenerate: {"make a new report", "新建一个报表"},
	IntentModify:   {"change the current template", "修改当前模板"},
	intentPreview:  {"see a preview", "预览报表"},
	intentPDF:      {"export a PDF", "导出 PDF"},
	intentJRXML:    {"download the JRXML", "下载 JRXML 模板"},
	intentConsult:  {"ask a question about report design", "咨询报表设计的问题"},
	IntentUndo:     {"undo the last change", "撤销上一次修改"},
	intentReset:    {"start over", "重新开始"},
}

// clarifyReply asks which of the engine's top intents was meant.
func clarifyReply(t Turn, r intent.Result, hasTemplate bool) string {
	var en, zh []string
	for _, c := range r.Candidates {
		w, ok := intentWords[c.Intent]
		if !ok || (c.Intent == intentGenerate && !hasTemplate && len(en) > 0) {
			continue
		}
		en, zh = append(en, w[0]), append(zh, w[1])
		if len(en) == 2 {
			break
		}
	}
	if len(en) < 2 {
		for _, in := range []string{IntentModify, intentConsult} {
			if len(en) < 2 && !slices.Contains(en, intentWords[in][0]) {
				en, zh = append(en, intentWords[in][0]), append(zh, intentWords[in][1])
			}
		}
	}
	return t.say("I am not sure what you mean: do you want to "+strings.Join(en, ", or ")+"? Please say it in other words (for example \"add a date column\" or \"how do I set a parameter?\").",
		"我不确定您的意思：是想"+strings.Join(zh, "，还是")+"？请换个说法（例如“加一列日期”或“参数怎么设置？”）。")
}

// questionWords mark a question in Chinese and English.
var (
	questionEndings = []string{"?", "？", "吗", "呢", "么"}
	questionWordsZh = []string{"为什么", "怎么", "如何", "哪些", "哪个", "什么", "是否", "多少", "几个", "有没有", "能不能"}
	questionStartEn = []string{"why ", "how ", "what ", "what's ", "which ", "when ", "where ", "who ", "is ", "are ", "does ", "do ", "can a ", "can i ", "should ", "is it "}
	requestWords    = []string{"帮我", "请", "给我", "能不能帮", "能不能把", "可以把", "能把", "可以帮", "麻烦", "能帮", "can you", "could you", "would you", "please", "can we", "let's"}
)

// isQuestion says whether msg asks something rather than asks for
// something: a question word or mark.
func isQuestion(msg string) bool {
	m := strings.ToLower(strings.TrimSpace(msg))
	for _, e := range questionEndings {
		if strings.HasSuffix(m, e) {
			return true
		}
	}
	for _, w := range questionWordsZh {
		if strings.Contains(m, w) {
			return true
		}
	}
	for _, w := range questionStartEn {
		if strings.HasPrefix(m, w) {
			return true
		}
	}
	return false
}

// newWords ask for a new report in so many words.
var newWords = []string{"新建", "新的", "重新做", "从头", "另做", "另外做", "再做一个", "生成一个", "new ", "generate a ", "create a ", "from scratch", "another "}

// asksNew says whether msg asks for a new report in so many words.
func asksNew(msg string) bool {
	m := strings.ToLower(msg) + " "
	for _, w := range newWords {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// isRequest says whether msg asks for something, even put as a question
// ("能帮我把标题改大吗？", "can you add a column?").
func isRequest(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range requestWords {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// askIntent asks the model which intent msg is.
func (a *Agent) askIntent(ctx context.Context, s State, msg string) (intentDecision, error) {
	sys := prompt("intent_classify.md")
	if s.JRXML != "" {
		sys += "\n\nThere is a current report template."
	} else {
		sys += "\n\nThere is no report template yet."
	}
	msgs := []llm.Message{llm.System(sys), llm.User(msg)}
	d, err := contract.Ask[intentDecision](ctx, contract.Chat(a.model, &msgs), contract.WithLogger(a.log))
	if err != nil {
		return d, fmt.Errorf("asking the model for the intent: %w", err)
	}
	return d, nil
}
