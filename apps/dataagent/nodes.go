package dataagent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/dataagent/sandbox"
	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
)

// noModel is what the agent says when a question needs a model.
func noModel(q string) string {
	return text.Say(q,
		"No language model is configured, and no stored example question matches this one closely enough to answer it from its SQL. To ask questions in plain language, set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint) and LOOM_MODEL, then restart loom serve.",
		"尚未配置语言模型，知识库里也没有与这个问题足够接近的示例问题可以直接用它的 SQL 回答。若要用自然语言提问，请设置 OPENAI_API_KEY（使用其他兼容 OpenAI 的服务时再设置 OPENAI_BASE_URL）和 LOOM_MODEL，然后重启 loom serve。")
}

// model is the model the turn uses: nil when none is configured or it
// could not be reached at the start of the turn.
func (a *Agent) model(s State) llm.Model {
	if s.ModelDown {
		return nil
	}
	return a.cfg.Model
}

// source returns the data source called name, or the first for "".
func (a *Agent) source(name string) (*Source, error) {
	if len(a.cfg.Sources) == 0 {
		return nil, errors.New("no data sources are configured")
	}
	if name == "" {
		return &a.cfg.Sources[0], nil
	}
	for i := range a.cfg.Sources {
		if a.cfg.Sources[i].Name == name {
			return &a.cfg.Sources[i], nil
		}
	}
	names := make([]string, len(a.cfg.Sources))
	for i, s := range a.cfg.Sources {
		names[i] = s.Name
	}
	return nil, fmt.Errorf("no data source %q (the sources are: %s)", name, strings.Join(names, ", "))
}

// unavailable ends the turn when err says the source called name cannot
// be reached now: "source NAME is unavailable: REASON", naming no host or
// credentials (the cause goes to the log). ok is false for other errors.
func (a *Agent) unavailable(s State, name string, err error) (_ State, ok bool) {
	var u *datasource.UnavailableError
	if !errors.As(err, &u) {
		return s, false
	}
	a.log.Warn("data source unavailable", "source", name, "reason", u.Reason, "err", u.Cause)
	return s.fail(text.Say(s.Query,
		fmt.Sprintf("Source %s is unavailable: %s. Try again later.", name, u.Reason),
		fmt.Sprintf("数据源 %s 暂时无法访问（%s），请稍后再试。", name, u.Reason))), true
}

// sourceName is the name of the source the state uses.
func (a *Agent) sourceName(s State) string {
	if src, err := a.source(s.Source); err == nil {
		return src.Name
	}
	return s.Source
}

// status tells whoever streams the run what the analyst is doing.
func status(ctx context.Context, q, en, cn string) {
	graph.Emit(ctx, graph.KindStatus, text.Say(q, en, cn))
}

// finish ends the turn with ans: it is recorded in the history, and the
// per-request switches are turned off for the next question.
func (s State) finish(ans *Answer) State {
	s.Answer = ans
	msg := ans.Text
	if ans.SQL != "" {
		msg += "\nSQL: " + text.OneLine(ans.SQL, 400)
	}
	s.History = append(slices.Clip(s.History), llm.User(s.Query), llm.Assistant(msg))
	s.HumanReview, s.NL2SQLOnly = false, false
	return s
}

// fail ends the turn with a message and no result.
func (s State) fail(text string) State {
	return s.finish(&Answer{Text: text, Failed: true})
}

// intentRecognition starts a turn: the question moves to Query, the
// per-turn keys are cleared, the earlier turns are compressed into the
// model's context, and the model tells an analysis request from small
// talk (a typed decision).
func (a *Agent) intentRecognition(ctx context.Context, s State) (State, error) {
	q := strings.TrimSpace(s.Question)
	s = State{
		Source: s.Source, HumanReview: s.HumanReview, NL2SQLOnly: s.NL2SQLOnly,
		History: s.History, Summary: s.Summary, Query: q,
	}
	if q == "" {
		return s.fail("Ask a question about the data. / 请提出一个关于数据的问题。"), nil
	}
	var set Settings
	if err := server.RunConfig(ctx, &set); err != nil {
		return s, err
	}
	s.Source = cmp.Or(s.Source, set.Source)
	if _, err := a.source(s.Source); err != nil {
		return s.fail(err.Error()), nil
	}
	if len(s.History) > 0 {
		view, err := a.history.Build(ctx, s.History, nil, &s.Summary)
		if err != nil {
			return s, fmt.Errorf("compressing the conversation: %w", err)
		}
		var b strings.Builder
		for _, m := range view.Messages {
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
			}
		}
		s.Context = b.String()
	}
	if a.model(s) == nil {
		s.Intent = &IntentDecision{Kind: "analysis"}
		return s, nil
	}
	d, err := askJSON[IntentDecision](ctx, a.cfg.Model, prompt("intent"),
		brief{}.add("Earlier in this conversation", s.Context).add("Message", q).String())
	if errors.Is(err, llm.ErrUnavailable) && ctx.Err() == nil {
		// The model cannot be reached: the turn goes on as without one,
		// so a question a stored example answers is still answered.
		a.log.Warn("dataagent: the model cannot be reached; answering from stored examples only", "err", err)
		s.ModelDown = true
		s.Intent = &IntentDecision{Kind: "analysis"}
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("recognising the intent: %w", err)
	}
	s.Intent = &d
	if d.Kind != "analysis" {
		reply := d.Reply
		if reply == "" {
			reply = text.Say(q, "I analyse the data of the configured sources; ask me a question about them.", "我负责分析已配置数据源中的数据，请提出与数据相关的问题。")
		}
		return s.finish(&Answer{Text: reply}), nil
	}
	return s, nil
}

// evidenceRecall recalls the caller's knowledge of the source for the
// question: terms, documents and examples. An example that matches the
// question above the threshold is kept: without a model its SQL answers.
func (a *Agent) evidenceRecall(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Recalling what is known about the data", "检索业务知识")
	if a.cfg.Knowledge == nil {
		return s, nil
	}
	ev, err := a.cfg.Knowledge.Evidence(ctx, server.Caller(ctx), a.sourceName(s), s.Query, 8)
	if err != nil {
		return s, fmt.Errorf("recalling knowledge: %w", err)
	}
	s.Evidence = ev
	for i, e := range ev {
		if e.Kind == "example" && e.SQL != "" && e.Match >= a.cfg.Match && (s.Example == nil || e.Match > s.Example.Match) {
			s.Example = &ev[i]
		}
	}
	return s, nil
}

// queryEnhance rewrites the question to stand on its own, with variants
// for recall. Without a model the question is used as it is.
func (a *Agent) queryEnhance(ctx context.Context, s State) (State, error) {
	if a.model(s) == nil {
		s.Enhanced = &EnhancedQuery{Canonical: s.Query}
		return s, nil
	}
	d, err := askJSON[EnhancedQuery](ctx, a.cfg.Model, prompt("enhance"),
		brief{}.add("Earlier in this conversation", s.Context).
			add("Knowledge", evidenceText(s.Evidence)).
			add("Question", s.Query).String())
	if err != nil {
		return s, fmt.Errorf("enhancing the question: %w", err)
	}
	d.Canonical = strings.TrimSpace(d.Canonical)
	s.Enhanced = &d
	if d.Canonical == "" {
		return s.fail(text.Say(s.Query, "I could not find a question about the data in that.", "没有从中识别出关于数据的问题。")), nil
	}
	return s, nil
}

// schemaRecall finds the tables the question needs, with the canonical
// and expanded queries, packed to the schema budget.
func (a *Agent) schemaRecall(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Finding the tables the question needs", "查找相关的表")
	src, err := a.source(s.Source)
	if err != nil {
		return s.fail(err.Error()), nil
	}
	var tables []datasource.Table
	if a.cfg.Schema != nil {
		tables, s.SchemaText, err = a.cfg.Schema.Recall(ctx, src.Name, recallQueries(s), a.cfg.SchemaBudget)
	} else {
		tables, err = src.Schema(ctx)
	}
	if err != nil {
		if s, ok := a.unavailable(s, src.Name, err); ok {
			return s, nil
		}
		return s, fmt.Errorf("recalling the schema of %s: %w", src.Name, err)
	}
	s.Tables = tables
	if len(tables) == 0 {
		return s.fail(text.Say(s.Query, "I found no tables in "+src.Name+" that this question is about.", "在 "+src.Name+" 中没有找到与这个问题相关的表。")), nil
	}
	return s, nil
}

// recallQueries are the queries of schema recall: the canonical
// question, the expanded ones and the question as asked.
func recallQueries(s State) []string {
	if s.Enhanced == nil {
		return []string{s.Query}
	}
	queries := []string{s.Enhanced.Canonical}
	for _, q := range append(slices.Clone(s.Enhanced.Expanded), s.Query) {
		if q = strings.TrimSpace(q); q != "" && !slices.Contains(queries, q) {
			queries = append(queries, q)
		}
	}
	return queries
}

// schemaForgetter is a SchemaRecaller that keeps what it read and can be
// told that a source's tables changed.
type schemaForgetter interface {
	Forget(source string)
}

// refreshSchema reads source's tables again after a table or column that
// was recalled turned out not to be there (renamed, dropped), and
// recalls the question's tables from them. It reports whether it did.
func (a *Agent) refreshSchema(ctx context.Context, s *State, source string) bool {
	f, ok := a.cfg.Schema.(schemaForgetter)
	if !ok {
		return false
	}
	f.Forget(source)
	tables, text, err := a.cfg.Schema.Recall(ctx, source, recallQueries(*s), a.cfg.SchemaBudget)
	if err != nil || len(tables) == 0 {
		return false
	}
	s.Tables, s.SchemaText = tables, text
	return true
}

// schemaError reports whether a database error says a table or column
// is not there (SQLite, PostgreSQL, MySQL and MariaDB wordings).
func schemaError(err error) bool {
	if errors.Is(err, datasource.ErrNoTable) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, w := range []string{"no such table", "no such column", "does not exist", "doesn't exist", "unknown column", "unknown table"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// tableRelation describes the recalled tables afresh and finds the joins
// between them: their foreign keys, and logical keys (a column
// TABLE_id or TABLEid naming another recalled table's one-column primary
// key). A database error is recorded for the route, which tries again
// while the relation_retries budget lasts; a table that is gone ends the
// turn.
func (a *Agent) tableRelation(ctx context.Context, s State) (State, error) {
	src, err := a.source(s.Source)
	if err != nil {
		return s.fail(err.Error()), nil
	}
	s.RelationError = ""
	tables := make([]datasource.Table, 0, len(s.Tables))
	refreshed := false
	for i := 0; i < len(s.Tables); i++ {
		t := s.Tables[i]
		d, err := src.Describe(ctx, t.Name)
		if s, ok := a.unavailable(s, src.Name, err); ok {
			return s, nil
		}
		// A table recalled but gone (renamed, dropped): the tables are
		// read again and recalled afresh, once.
		if errors.Is(err, datasource.ErrNoTable) && !refreshed && ctx.Err() == nil {
			refreshed = true
			if a.refreshSchema(ctx, &s, src.Name) {
				tables, i = tables[:0], -1
				continue
			}
		}
		if err != nil {
			s.RelationError = fmt.Sprintf("describing %s: %v", t.Name, err)
			if errors.Is(err, datasource.ErrNoTable) || ctx.Err() != nil {
				return s.fail(relationFailed(s)), nil
			}
			return s, nil
		}
		tables = append(tables, *d)
	}
	s.Tables = tables
	s.Relations = relations(tables)
	return s, nil
}

// relationFailed says the tables' structure could not be read, and why.
func relationFailed(s State) string {
	return text.Say(s.Query, "I could not read the tables' structure: ", "无法读取表结构：") + s.RelationError
}

// relations are the joins between tables: foreign keys, then logical keys.
func relations(tables []datasource.Table) []Relation {
	var out []Relation
	byName := map[string]datasource.Table{}
	for _, t := range tables {
		byName[strings.ToLower(t.Name)] = t
	}
	seen := map[string]bool{}
	for _, t := range tables {
		for _, fk := range t.ForeignKeys {
			if _, ok := byName[strings.ToLower(fk.RefTable)]; !ok {
				continue
			}
			for i, c := range fk.Columns {
				if i < len(fk.RefColumns) {
					r := Relation{From: t.Name + "." + c, To: fk.RefTable + "." + fk.RefColumns[i]}
					seen[strings.ToLower(r.From)] = true
					out = append(out, r)
				}
			}
		}
	}
	for _, t := range tables {
		for _, c := range t.Columns {
			name := strings.ToLower(c.Name)
			base, ok := strings.CutSuffix(name, "_id")
			if !ok {
				base, ok = strings.CutSuffix(name, "id")
			}
			if !ok || base == "" || seen[strings.ToLower(t.Name+"."+c.Name)] {
				continue
			}
			for _, cand := range []string{base, base + "s", base + "es"} {
				ref, found := byName[cand]
				if found && !strings.EqualFold(ref.Name, t.Name) && len(ref.PrimaryKey) == 1 {
					out = append(out, Relation{From: t.Name + "." + c.Name, To: ref.Name + "." + ref.PrimaryKey[0], Logical: true})
					break
				}
			}
		}
	}
	return out
}

// feasibilityAssessment decides whether the recalled data can answer the
// question (a typed decision). Without a model only a question that
// matches a stored example can be answered; any other is told which
// variables configure a model, with what recall found.
func (a *Agent) feasibilityAssessment(ctx context.Context, s State) (State, error) {
	if a.model(s) == nil {
		if s.Example != nil {
			s.Feasibility = &FeasibilityDecision{Kind: "analysis", Reason: "matches the stored example " + s.Example.Title}
			return s, nil
		}
		s.Feasibility = &FeasibilityDecision{Kind: "not_analysis", Reason: "no model"}
		if s.ModelDown {
			return s.fail(text.Say(s.Query,
				"The language model cannot be reached now, and no stored example question matches this one closely enough to answer it from its SQL. Try again later.",
				"语言模型暂时无法访问，知识库里也没有与这个问题足够接近的示例问题可以直接用它的 SQL 回答。请稍后再试。") + a.recalled(s)), nil
		}
		return s.fail(noModel(s.Query) + a.recalled(s)), nil
	}
	d, err := askJSON[FeasibilityDecision](ctx, a.cfg.Model, prompt("feasibility"),
		brief{}.add("Tables", s.schema()).
			add("Joins", relationText(s.Relations)).
			add("Knowledge", evidenceText(s.Evidence)).
			add("Question", s.Enhanced.Canonical).String())
	if err != nil {
		return s, fmt.Errorf("assessing feasibility: %w", err)
	}
	s.Feasibility = &d
	if d.Kind != "analysis" {
		text := d.Reply
		if text == "" {
			text = d.Reason
		}
		return s.fail(text), nil
	}
	return s, nil
}

// recalled lists what recall found, for an answer without a model.
func (a *Agent) recalled(s State) string {
	var names []string
	for _, t := range s.Tables {
		names = append(names, t.Name)
	}
	var ev []string
	for _, e := range s.Evidence[:min(len(s.Evidence), 5)] {
		ev = append(ev, e.Title)
	}
	out := ""
	if len(names) > 0 {
		out += text.Say(s.Query, "\n\nTables that look relevant: ", "\n\n可能相关的表：") + strings.Join(names, ", ")
	}
	if len(ev) > 0 {
		out += text.Say(s.Query, "\nKnowledge that looks relevant: ", "\n可能相关的知识：") + strings.Join(ev, "; ")
	}
	return out
}

// planner makes the plan: with a model, from the question, the schema,
// the knowledge, and what went wrong with the last plan (a validation
// error or a person's comment); in nl2sql_only mode, or answering from
// a stored example, one SQL step.
func (a *Agent) planner(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Planning the analysis", "制定分析计划")
	s.PlanChecked, s.PlanValid, s.Approved, s.Step, s.Results = false, false, false, 0, nil
	q := s.Enhanced.Canonical
	switch {
	case a.model(s) == nil:
		s.Plan = &Plan{Thought: "answer from the stored example " + s.Example.Title, Steps: []Step{{Tool: "sql", Instruction: s.Example.Title}}}
		if !s.NL2SQLOnly {
			s.Plan.Steps = append(s.Plan.Steps, Step{Tool: "report", Instruction: q})
		}
		return s, nil
	case s.NL2SQLOnly:
		s.Plan = &Plan{Steps: []Step{{Tool: "sql", Instruction: q}}}
		return s, nil
	}
	b := brief{}.add("Earlier in this conversation", s.Context).
		add("Tables", s.schema()).
		add("Joins", relationText(s.Relations)).
		add("Knowledge", evidenceText(s.Evidence))
	if s.Plan != nil && (s.PlanError != "" || s.Feedback != nil) {
		b = b.add("Previous plan", planText(s.Plan))
	}
	if s.PlanError != "" {
		b = b.add("What was wrong with the previous plan (fix it)", s.PlanError)
	}
	if s.Feedback != nil && !s.Feedback.Accept && s.Feedback.Note != "" {
		b = b.add("The user rejected the previous plan with this comment (follow it)", s.Feedback.Note)
	}
	b = b.add("Question", q)
	plan, err := askJSON[Plan](ctx, a.cfg.Model, prompt("planner"), b.String())
	if err != nil {
		s.Plan = nil
		s.PlanError = "the plan could not be read: " + err.Error()
		return s, nil
	}
	s.Plan = &plan
	return s, nil
}

// validate checks a plan: one to MaxSteps steps with instructions, at
// least one SQL step, Python only after SQL, a report only last, and
// nothing but SQL in nl2sql_only mode.
func validate(p *Plan, nl2sqlOnly bool) error {
	if p == nil || len(p.Steps) == 0 {
		return errors.New("the plan has no steps")
	}
	if len(p.Steps) > MaxSteps {
		return fmt.Errorf("the plan has %d steps; at most %d are allowed", len(p.Steps), MaxSteps)
	}
	sql := false
	for i, st := range p.Steps {
		switch {
		case strings.TrimSpace(st.Instruction) == "":
			return fmt.Errorf("step %d has no instruction", i+1)
		case st.Tool == "sql":
			sql = true
		case nl2sqlOnly:
			return fmt.Errorf("step %d is %s; only sql steps are allowed when only SQL is asked for", i+1, st.Tool)
		case st.Tool == "python" && !sql:
			return fmt.Errorf("step %d is python but no sql step comes before it: python analyses the results of earlier sql steps", i+1)
		case st.Tool == "report" && i != len(p.Steps)-1:
			return fmt.Errorf("step %d is report but is not the last step", i+1)
		case st.Tool != "python" && st.Tool != "report":
			return fmt.Errorf("step %d has the unknown tool %q", i+1, st.Tool)
		}
	}
	if !sql {
		return errors.New("the plan has no sql step")
	}
	return nil
}

// planExecutor validates a new plan (an invalid one goes back to the
// planner while the plan_repairs budget lasts), ends an nl2sql_only turn
// when its SQL steps are done, and clears what the step about to run
// records. Where the run goes next is routeExecutor's reading of the
// state: the plan's validity, whether review is needed, the step's kind.
func (a *Agent) planExecutor(_ context.Context, s State) (State, error) {
	if !s.PlanChecked {
		s.PlanChecked = true
		if err := validate(s.Plan, s.NL2SQLOnly); err != nil {
			if s.PlanError != "" && s.Plan == nil {
				err = errors.New(s.PlanError)
			}
			s.PlanValid, s.PlanError = false, err.Error()
			return s, nil
		}
		s.PlanValid, s.PlanError = true, ""
	}
	if a.reviewNeeded(s) {
		return s, nil
	}
	if s.Step >= len(s.Plan.Steps) && s.NL2SQLOnly {
		return s.finish(a.sqlAnswer(s)), nil
	}
	// A SQL or Python step starts with nothing recorded (its tries are
	// the budgets'); the report step leaves the last step's for the
	// record.
	switch s.step().Tool {
	case "sql":
		s.SQL, s.SQLGiveUp, s.RetryReason, s.SQLErrors = "", "", "", nil
		s.Consistent, s.Objection, s.Disputed = false, "", false
	case "python":
		s.Python, s.PythonOK, s.PythonFallback, s.PythonOutput, s.PythonErrors = "", false, false, "", nil
	}
	return s, nil
}

// reviewNeeded says the plan waits for a person: the request asked for
// review, it is not approved yet, and there is a model (an answer from a
// stored example has no plan of the model's to review).
func (a *Agent) reviewNeeded(s State) bool {
	return s.HumanReview && !s.Approved && a.model(s) != nil
}

// sqlAnswer is the answer of nl2sql_only mode: the last statement and its
// result.
func (a *Agent) sqlAnswer(s State) *Answer {
	ans := &Answer{Text: text.Say(s.Query, "Here is the SQL and its result.", "SQL 及其结果如下。")}
	if s.Example != nil && a.model(s) == nil {
		ans.FromExample = s.Example.Title
		ans.Text = fromExample(s)
	}
	if n := len(s.Results); n > 0 {
		r := s.Results[n-1]
		ans.SQL, ans.Columns, ans.Rows, ans.Truncated = r.SQL, r.Columns, r.Rows, r.Truncated
	}
	return ans
}

func fromExample(s State) string {
	if s.ModelDown {
		return text.Say(s.Query,
			"The language model cannot be reached now, so I answered from the stored example question \""+s.Example.Title+"\", which matches yours, by running its SQL.",
			"语言模型暂时无法访问，因此用知识库中与之匹配的示例问题“"+s.Example.Title+"”的 SQL 作答。")
	}
	return text.Say(s.Query,
		"No language model is configured, so I answered from the stored example question \""+s.Example.Title+"\", which matches yours, by running its SQL.",
		"尚未配置语言模型，因此用知识库中与之匹配的示例问题“"+s.Example.Title+"”的 SQL 作答。")
}

// humanFeedback shows the plan and waits for a person (graph.Ask): an
// approval runs it, a rejection with a comment sends it back to the
// planner with the comment, a rejection without one ends the turn.
func (a *Agent) humanFeedback(ctx context.Context, s State) (State, error) {
	fb, err := graph.Ask[Feedback](ctx, PlanReview{Summary: reviewText(s.Query, s.Plan), Question: s.Query, Plan: s.Plan})
	if err != nil {
		return s, err
	}
	fb.Note = strings.TrimSpace(fb.Note)
	s.Feedback = &fb
	switch {
	case fb.Accept:
		s.Approved = true
	case fb.Note == "":
		return s.fail(text.Say(s.Query, "The plan was rejected, so I stopped. Ask again, or reject with a comment saying what to change.", "计划被拒绝，已停止。可以重新提问，或在拒绝时说明要修改什么。")), nil
	}
	return s, nil
}

// schema is the recalled schema as the model reads it.
func (s State) schema() string {
	if s.SchemaText != "" {
		return s.SchemaText
	}
	return schemaText(s.Tables)
}

// reviewText is the plan as a person reviews it.
func reviewText(q string, p *Plan) string {
	return text.Say(q, "Here is my plan:\n\n", "分析计划如下：\n\n") + planText(p) +
		text.Say(q, "\nApprove it to run it, or reject it with a note on what to change.", "\n批准后开始执行；如需修改，请拒绝并说明要改什么。")
}

// step is the plan step being run.
func (s State) step() Step {
	if s.Plan != nil && s.Step < len(s.Plan.Steps) {
		return s.Plan.Steps[s.Step]
	}
	return Step{}
}

// sqlDecision is sql_generate's answer.
type sqlDecision struct {
	SQL          string `json:"sql,omitempty" jsonschema:"description=one read-only query in the source's dialect"`
	Unanswerable string `json:"unanswerable,omitempty" jsonschema:"description=only when no SQL over these tables can do the step: why"`
}

// sqlGenerate writes the statement of the current SQL step: with the
// model, from the step, the schema, the knowledge and the errors of the
// step's earlier tries; without one, the stored example's. A generation
// that gives no statement, or the same statement as the try before, is a
// failure, tried again while the sql_tries budget lasts.
func (a *Agent) sqlGenerate(ctx context.Context, s State) (State, error) {
	s.Consistent = false
	src, err := a.source(s.Source)
	if err != nil {
		return s.fail(err.Error()), nil
	}
	var stmt string
	if a.model(s) == nil {
		if s.Example == nil {
			return s.fail(noModel(s.Query)), nil
		}
		if len(s.SQLErrors) > 0 {
			return s.fail(text.Say(s.Query, "The stored example's SQL did not run: ", "示例的 SQL 无法执行：") + s.RetryReason), nil
		}
		stmt = s.Example.SQL
	} else {
		st := s.step()
		b := brief{}.add("Data source", fmt.Sprintf("%s (%s)", src.Name, src.Dialect())).
			add("Tables", s.schema()).
			add("Joins", relationText(s.Relations)).
			add("Knowledge", evidenceText(s.Evidence)).
			add("Earlier in this conversation", s.Context).
			add("Results of earlier steps", resultsText(s.Results, s.Query)).
			add("Question", s.Enhanced.Canonical).
			add("This step", st.Instruction)
		if len(s.SQLErrors) > 0 {
			b = b.add("Earlier tries of this step failed (do not repeat them)", "- "+strings.Join(s.SQLErrors, "\n- "))
		}
		d, err := askJSON[sqlDecision](ctx, a.cfg.Model, prompt("sql"), b.String())
		switch {
		case err != nil:
			a.log.Warn("dataagent: the SQL step's answer could not be read", "step", s.Step+1, "err", err)
			return s.sqlFailure(sqlUnreadable + err.Error()), nil
		case strings.TrimSpace(d.SQL) == "" && d.Unanswerable != "":
			s.SQLGiveUp = d.Unanswerable
			return s.fail(d.Unanswerable), nil
		case strings.TrimSpace(d.SQL) == "":
			return s.sqlFailure("no SQL was given"), nil
		}
		stmt = strings.TrimSpace(d.SQL)
	}
	if s.SQL != "" && normalSQL(stmt) == normalSQL(s.SQL) {
		// The statement the check objected to, written again: the
		// writer disputes the objection, and the check judges it once
		// more. Any other repeat (or a second dispute) is a failure.
		if s.Objection == "" || s.Disputed {
			return s.sqlFailure("the same SQL was generated twice in a row: " + text.OneLine(stmt, 300)), nil
		}
		s.Disputed = true
		return s, nil
	}
	s.SQL, s.Objection, s.Disputed = stmt, "", false
	return s, nil
}

// sqlFailure records a failed generation of the step: no statement is
// left to check.
func (s State) sqlFailure(reason string) State {
	s.SQL, s.Objection, s.Disputed, s.RetryReason = "", "", false, reason
	s.SQLErrors = append(slices.Clip(s.SQLErrors), reason)
	return s
}

// sqlFailed says the step's SQL tries are spent, with the last problem.
func sqlFailed(s State, tries int) string {
	reason := s.RetryReason
	if strings.HasPrefix(reason, sqlUnreadable) {
		// The parser's error was for the model, not the reader.
		reason = text.Say(s.Query, "the model's answer could not be read as SQL", "模型的回答无法读成 SQL")
	}
	return fmt.Sprintf(text.Say(s.Query, "I could not write working SQL in %d tries. The last problem: %s", "尝试 %d 次仍未写出可用的 SQL。最后的问题：%s"), tries, reason)
}

// sqlUnreadable starts the reason of a SQL try whose answer could not
// be read.
const sqlUnreadable = "the answer could not be read: "

// normalSQL is a statement without its spacing, case and final
// semicolons, to tell the same statement written again.
func normalSQL(stmt string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.TrimRight(strings.TrimSpace(stmt), "; \n")), " "))
}

// consistencyDecision is semantic_consistency's verdict.
type consistencyDecision struct {
	Consistent bool   `json:"consistent" jsonschema:"description=true when the SQL does what the step asks\\, over the right tables\\, columns\\, filters and grouping"`
	Reason     string `json:"reason,omitempty" jsonschema:"description=when not consistent\\, what is wrong\\, for whoever rewrites it"`
}

// semanticConsistency checks the statement before it runs: the guard's
// verdict (one read-only query), then, with a model, whether it does what
// the step asks. A failure goes back to sql_generate with the reason.
func (a *Agent) semanticConsistency(ctx context.Context, s State) (State, error) {
	src, err := a.source(s.Source)
	if err != nil {
		return s.fail(err.Error()), nil
	}
	stmt, err := datasource.Check(src.Dialect(), s.SQL)
	if err != nil {
		s.Consistent, s.Objection = false, ""
		s.RetryReason = "refused before running: " + err.Error()
		s.SQLErrors = append(slices.Clip(s.SQLErrors), s.RetryReason+" (SQL: "+text.OneLine(s.SQL, 300)+")")
		return s, nil
	}
	if a.model(s) != nil {
		b := brief{}.add("Tables", s.schema()).
			add("Knowledge", evidenceText(s.Evidence)).
			add("Question", s.Enhanced.Canonical).
			add("This step", s.step().Instruction).
			add("SQL", stmt)
		if s.Disputed {
			b = b.add("Your earlier objection to this same SQL, which its writer kept (judge it again: pass it if the objection was wrong)", s.Objection)
		}
		d, err := askJSON[consistencyDecision](ctx, a.cfg.Model, prompt("consistency"), b.String())
		if err != nil {
			return s, fmt.Errorf("checking the SQL: %w", err)
		}
		if !d.Consistent {
			s.Consistent, s.Objection = false, cmp.Or(strings.TrimSpace(d.Reason), "no reason given")
			s.RetryReason = "the SQL does not do what the step asks: " + d.Reason
			s.SQLErrors = append(slices.Clip(s.SQLErrors), s.RetryReason+" (SQL: "+text.OneLine(stmt, 300)+")")
			return s, nil
		}
	}
	s.SQL, s.Consistent, s.Objection = stmt, true, ""
	return s, nil
}

// sqlExecute runs the statement through the guarded, read-only path. An
// error goes back to sql_generate with the database's message; a result
// completes the step.
func (a *Agent) sqlExecute(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Running the SQL", "执行 SQL")
	src, err := a.source(s.Source)
	if err != nil {
		return s.fail(err.Error()), nil
	}
	res, err := src.Query(ctx, s.SQL)
	if err != nil {
		if ctx.Err() != nil {
			return s, err
		}
		if s, ok := a.unavailable(s, src.Name, err); ok {
			return s, nil
		}
		s.RetryReason = "the database answered with an error: " + err.Error()
		// A table or column that is not there: the tables may have
		// changed since they were read; the retry sees them afresh.
		if schemaError(err) && a.refreshSchema(ctx, &s, src.Name) {
			s.RetryReason += " (the tables were read again; use only the tables and columns now listed)"
		}
		s.SQLErrors = append(slices.Clip(s.SQLErrors), s.RetryReason+" (SQL: "+text.OneLine(s.SQL, 300)+")")
		return s, nil
	}
	s.Results = append(slices.Clip(s.Results), StepResult{
		Step: s.Step, Instruction: s.step().Instruction, SQL: s.SQL,
		Columns: res.Columns, Rows: res.Rows, Truncated: res.Truncated,
	})
	s.Step++
	return s, nil
}

// pythonGenerate writes the Python code of the current step, given the
// earlier results as CSV files and the errors of earlier tries.
func (a *Agent) pythonGenerate(ctx context.Context, s State) (State, error) {
	s.Python, s.PythonOK = "", false
	if a.model(s) == nil {
		return s, nil
	}
	b := brief{}.add("Data files in the current directory", dataFiles(s.Results)).
		add("Question", s.Enhanced.Canonical).
		add("This step", s.step().Instruction)
	if len(s.PythonErrors) > 0 {
		b = b.add("Earlier tries of this step failed (fix the cause)", "- "+strings.Join(s.PythonErrors, "\n- "))
	}
	text, err := askText(ctx, a.cfg.Model, prompt("python"), b.String())
	if err != nil {
		return s, fmt.Errorf("writing Python: %w", err)
	}
	code, ok := contract.Block(text, "python")
	if !ok {
		code = text
	}
	s.Python = strings.TrimSpace(code)
	return s, nil
}

// dataFiles describes the CSV files a Python step gets.
func dataFiles(rs []StepResult) string {
	var b strings.Builder
	for i, r := range rs {
		fmt.Fprintf(&b, "- data_%d.csv (step %d: %s): columns %s; %d rows\n", i+1, r.Step+1, text.OneLine(r.Instruction, 120), strings.Join(r.Columns, ", "), len(r.Rows))
	}
	return b.String()
}

// csvFiles writes the results as data_1.csv, data_2.csv, …
func csvFiles(rs []StepResult) map[string][]byte {
	files := map[string][]byte{}
	for i, r := range rs {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write(r.Columns)
		for _, row := range r.Rows {
			cells := make([]string, len(row))
			for j, v := range row {
				if v != nil {
					cells[j] = csvCell(v)
				}
			}
			w.Write(cells)
		}
		w.Flush()
		files[fmt.Sprintf("data_%d.csv", i+1)] = buf.Bytes()
	}
	return files
}

// csvCell writes a value for a CSV file: null is empty, numbers in full.
func csvCell(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// pythonExecute runs the code in the sandbox with the results as CSV
// files. A failure goes back to python_generate with the error while the
// python_tries budget lasts (then the step goes on without Python, or
// the turn ends with StrictPython); without a sandbox the step goes on
// without Python at once (fallback mode).
func (a *Agent) pythonExecute(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Running the Python analysis in the sandbox", "在沙箱中运行 Python 分析")
	fallback := func(why string) (State, error) {
		s.PythonFallback, s.PythonOK, s.PythonOutput = true, false, why
		s.FallbackNote = why
		return s, nil
	}
	if a.cfg.Python == nil {
		return fallback("no Python sandbox is configured")
	}
	failed := func(why string) (State, error) {
		s.PythonOK = false
		s.PythonErrors = append(slices.Clip(s.PythonErrors), why)
		s.PythonOutput = why
		return s, nil
	}
	if strings.TrimSpace(s.Python) == "" {
		return failed("no Python code was written")
	}
	out, err := a.cfg.Python.Run(ctx, s.Python, csvFiles(s.Results))
	var pe *PythonError
	switch {
	// What the sandbox's programs said, and where its files are, go to
	// the log; the report and the model get the reason in words.
	case errors.Is(err, ErrNoSandbox):
		a.log.Warn("dataagent: no Python sandbox", "err", err)
		return fallback(sandboxReason(err))
	case errors.As(err, &pe):
		return failed(pe.Error())
	case err != nil:
		if ctx.Err() != nil {
			return s, err
		}
		a.log.Warn("dataagent: the Python sandbox could not run a script", "err", err)
		return failed("the sandbox could not run the script")
	}
	s.PythonOK, s.PythonOutput = true, oneOutput(out.Stdout)
	s.Images = append(slices.Clip(s.Images), pngs(s.Step, out.Files, MaxImages-len(s.Images))...)
	return s, nil
}

// Bounds of the charts a turn's Python steps bring to the report.
const (
	// MaxImages is how many PNG charts one turn keeps.
	MaxImages = 6
	// MaxImageBytes is the largest PNG kept.
	MaxImageBytes = 1 << 20
)

// pngs are the PNG files among files (by name, those that are PNG
// images, at most MaxImageBytes each), at most n of them; anything else
// a script wrote is left.
func pngs(step int, files map[string][]byte, n int) []Image {
	var out []Image
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if len(out) >= n {
			break
		}
		if !strings.EqualFold(path.Ext(name), ".png") || len(data) > MaxImageBytes || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			continue
		}
		out = append(out, Image{Step: step, Name: path.Base(name), PNG: data})
	}
	return out
}

// oneOutput bounds what a run printed to what the model reads.
func oneOutput(s string) string {
	const maxOutput = 8000
	if len(s) <= maxOutput {
		return s
	}
	return s[:maxOutput] + "\n… (output cut)"
}

// PythonError is a Python script that ran and failed: its error output,
// or the limit that stopped it.
type PythonError struct {
	Message string
}

func (e *PythonError) Error() string { return e.Message }

// pythonAnalyze reads the step's Python output (or, in fallback mode,
// the SQL results themselves, saying Python did not run) into findings
// for the report.
func (a *Agent) pythonAnalyze(ctx context.Context, s State) (State, error) {
	if !s.PythonOK && !s.PythonFallback {
		// Here by the python_tries budget's exit: every try failed. The
		// tracebacks were for the model writing the code; the log keeps
		// the last, the reader gets a sentence.
		n := len(s.PythonErrors)
		a.log.Warn("dataagent: the Python step failed every try", "step", s.Step+1, "tries", n, "last_error", s.PythonOutput)
		s.PythonFallback = true
		s.PythonOutput = text.Say(s.Query, fmt.Sprintf("the Python analysis failed %d times", n), fmt.Sprintf("Python 分析失败了 %d 次", n))
		s.FallbackNote = s.PythonOutput
	}
	st := s.step()
	var b brief
	if s.PythonFallback {
		b = b.add("Python could not run, so analyse the data below directly, without Python", s.PythonOutput).
			add("Data", resultsText(s.Results, s.Query))
	} else {
		b = b.add("Python code", s.Python).add("What it printed", s.PythonOutput)
	}
	b = b.add("Question", s.Enhanced.Canonical).add("This step", st.Instruction)
	finding := ""
	if a.model(s) != nil {
		text, err := askText(ctx, a.cfg.Model, prompt("analyze"), b.String())
		if err != nil {
			return s, fmt.Errorf("analysing the Python output: %w", err)
		}
		finding = strings.TrimSpace(text)
	}
	if s.PythonFallback {
		finding = text.Say(s.Query, "(This analysis ran without Python: ", "（本步分析未使用 Python：") + s.PythonOutput + text.Say(s.Query, ")", "）") + "\n" + finding
	}
	s.PythonAnalysis = append(slices.Clip(s.PythonAnalysis), strings.TrimSpace(finding))
	s.Step++
	return s, nil
}

// sandboxReason says why there is no sandbox in the words of its first
// clause ("no Python sandbox on this machine: bwrap not found (install
// the bubblewrap package)"), without what follows: a program's path, its
// error or its output.
func sandboxReason(err error) string {
	_, rest, _ := strings.Cut(err.Error(), sandbox.ErrUnavailable.Error()+": ")
	clause, _, _ := strings.Cut(rest, ": ")
	if clause = strings.TrimSpace(clause); clause == "" || strings.ContainsAny(clause, "/\\") {
		return ErrNoSandbox.Error()
	}
	return ErrNoSandbox.Error() + ": " + clause
}

// ran says the statement of the current SQL step ran: its result is the
// last one recorded, for the step before the current one.
func (s State) ran() bool {
	n := len(s.Results)
	return n > 0 && s.Results[n-1].Step == s.Step-1 && s.Results[n-1].SQL == s.SQL
}

// giveUp ends a turn whose budget was spent, saying which and why: the
// run comes here only by a budget's exit. Which one is read from how far
// the turn got.
func (a *Agent) giveUp(ctx context.Context, s State) (State, error) {
	q := s.Query
	switch {
	case s.Feasibility == nil:
		return s.fail(relationFailed(s)), nil
	case !s.PlanValid:
		a.log.Warn("dataagent: no valid plan", "repairs", PlanRepairs, "err", s.PlanError)
		if s.Plan == nil {
			// What the model answered could not be read as a plan: the
			// reader is not shown the parser's error.
			return s.fail(text.Say(q, "I could not make a plan: the model's answer could not be read as one. Try asking again, perhaps in other words.",
				"无法生成分析计划：模型的回答无法读成计划。请再问一次，或换一种说法。")), nil
		}
		return s.fail(text.Say(q, "I could not make a valid plan: ", "无法生成有效的分析计划：") + s.PlanError), nil
	case s.Feedback != nil && !s.Feedback.Accept:
		return s.fail(fmt.Sprintf(text.Say(q, "The plan was rejected %d times, so I stopped. Ask the question again with what you want.", "计划已被拒绝 %d 次，已停止。请把要求写进问题里重新提问。"), MaxRejections+1)), nil
	case s.step().Tool == "python":
		n := len(s.PythonErrors)
		a.log.Warn("dataagent: the Python step failed every try", "step", s.Step+1, "tries", n, "last_error", s.PythonOutput)
		return s.fail(text.Say(q, fmt.Sprintf("The Python analysis failed %d times, so the analysis stopped.", n),
			fmt.Sprintf("Python 分析失败了 %d 次，分析已停止。", n))), nil
	}
	return s.fail(sqlFailed(s, SQLTries)), nil
}
