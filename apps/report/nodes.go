package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
)

// processInput starts a turn: the message joins the history, an upload is
// read (a form's layout, or a template), and the failure context the last
// turn left is carried into this turn's prompts.
func (a *Agent) processInput(ctx context.Context, s State) (State, error) {
	msg := strings.TrimSpace(s.Message)
	s.Turn = Turn{Text: msg, Zh: hasHan(msg) || (msg == "" && s.Turn.Zh), Carry: s.PendingFailure}
	s.PendingFailure = nil
	s.Message = ""
	if s.Title == "" {
		s.Title = firstLine(msg, 60)
	}
	if msg != "" {
		s.History = append(s.History, llm.User(msg))
	}
	id := s.Upload
	s.Upload = ""
	if id == "" {
		return s, nil
	}
	u, err := a.store.Upload(ctx, graph.Thread(ctx), id)
	if err != nil {
		s.Turn.Reply = s.Turn.say("I cannot find upload "+id+" on this conversation; upload the file again.", "找不到这个会话的上传文件 "+id+"，请重新上传。")
		return s, nil
	}
	s.Turn.Uploaded = true
	ref := &uploadRef{ID: u.ID, Kind: u.Kind, Name: u.Name}
	switch u.Kind {
	case KindJRXML:
		s.Design = Design{Template: string(u.Data), Source: ref}
		return s, nil
	case kindImage, kindXLSX, kindPDF, KindDOCX:
		if a.cfg.Layouts == nil {
			s.Turn.Reply = s.Turn.say("Reading forms is not available on this server (it needs the tesseract program for images).", "此服务器不能读取表单（图片需要 tesseract 程序）。")
			return s, nil
		}
		l, err := a.cfg.Layouts.Read(ctx, u.Kind, u.Data)
		if err != nil {
			a.log.Warn("report: reading an upload", "upload", u.ID, "kind", u.Kind, "err", err)
			s.Turn.Reply = s.Turn.say("I could not read the layout of "+u.Name+": "+err.Error(), "无法读取 "+u.Name+" 的版式："+err.Error())
			return s, nil
		}
		s.Design = Design{Layout: l, Source: ref}
	}
	return s, nil
}

// retrieve looks up the knowledge bases: past corrections of similar
// problems, similar templates and their fields.
func (a *Agent) retrieve(ctx context.Context, s State) (State, error) {
	if s.Turn.Intent == "" { // a fallback: R1 took it for a new design
		s.Turn.Intent = intentGenerate
	}
	query := s.Turn.Text
	if s.Layout != nil {
		query += " " + strings.Join(s.Layout.Labels, " ")
	}
	var b strings.Builder
	if s.Turn.Carry != nil {
		query += " " + s.Turn.Carry.Error
	}
	for _, c := range a.errorKB.Search(query, 3) {
		fmt.Fprintf(&b, "A past error and its fix:\nError: %s\nFix: %s\n\n", c.Title, c.Text)
	}
	if a.cfg.Templates != nil {
		for i, d := range a.cfg.Templates.Search(query, 3) {
			if i == 0 {
				s.Turn.KBTemplate = d.JRXML
			}
			s.Turn.KBFields = appendNew(s.Turn.KBFields, d.Fields...)
			fmt.Fprintf(&b, "A similar template: %s (fields: %s)\n", d.Title, strings.Join(d.Fields, ", "))
		}
	}
	s.Turn.Retrieved = strings.TrimSpace(b.String())
	return s, nil
}

// generate writes a template in one go with the model (streamed, and
// continued at the length limit). Without a model, an uploaded template
// is taken as it is.
func (a *Agent) generate(ctx context.Context, s State) (State, error) {
	if a.model == nil {
		if s.Template != "" {
			s.JRXML = s.Template
			return s, nil
		}
		if s.Turn.Reply == "" {
			s.Turn.needsModel(s.Turn.say("Writing a template from a description", "根据描述生成模板"),
				s.Turn.say(" Without a model, upload a form (image, XLSX or PDF) or a JRXML template.", "没有模型时，可以上传表单（图片、XLSX 或 PDF）或 JRXML 模板。"))
		}
		return s, nil
	}
	pins := a.contextPins(s)
	msgs, fits, err := a.messagesFit(ctx, &s, prompt("initial_generation.md"), pins)
	if err != nil {
		return s, err
	}
	if !fits && s.Template != "" {
		// An uploaded template too long for the prompt budget is worked
		// on in windows, never cut.
		out, err := a.editByWindows(ctx, &s, s.Template, s.Turn.Text, pins.Remove("uploaded_template"))
		if err != nil {
			return s, fmt.Errorf("generating from the uploaded template: %w", err)
		}
		s.JRXML = out
		return s, nil
	}
	out, err := a.write(ctx, kindDraft, msgs)
	if err != nil {
		return s, fmt.Errorf("generating the template: %w", err)
	}
	s.JRXML = extractXML(out)
	return s, nil
}

// generateSkeleton drafts the template from the layout: with the model,
// or the toolkit's deterministic skeleton without one.
func (a *Agent) generateSkeleton(ctx context.Context, s State) (State, error) {
	if a.model == nil {
		s.JRXML = s.Layout.Skeleton
		if s.JRXML == "" {
			s.Turn.needsModel(s.Turn.say("Drafting a template from this layout", "根据此版式起草模板"), "")
		}
		return s, nil
	}
	schema := string(s.Layout.Schema)
	if len(schema) > 12000 {
		schema = schema[:12000]
	}
	pins := append(a.contextPins(s), convo.Pin{Key: "layout", Content: schema})
	msgs, err := a.messages(ctx, &s, prompt("skeleton_generation.md"), pins)
	if err != nil {
		return s, err
	}
	out, err := a.write(ctx, kindDraft, msgs)
	if err != nil {
		return s, fmt.Errorf("drafting the skeleton: %w", err)
	}
	s.JRXML = extractXML(out)
	if _, err := jrxml.Parse([]byte(s.JRXML)); err != nil && s.Layout.Skeleton != "" {
		a.log.Warn("report: the model's skeleton is not well-formed; using the toolkit's", "err", err)
		s.JRXML = s.Layout.Skeleton
	}
	return s, nil
}

// mapFields gives the skeleton's $F{field_N} the names of the form's
// labels: each field the label beside it or its column's header, without
// a model (MapFields).
func (a *Agent) mapFields(_ context.Context, s State) (State, error) {
	if s.Layout != nil {
		names := fieldNames(s.JRXML, s.Layout.Labels)
		s.JRXML = renameFields(s.JRXML, names)
		// The form's own values, for previews, under the fields' names.
		l := *s.Layout
		l.Rows = make([]map[string]any, len(s.Layout.Rows))
		for i, row := range s.Layout.Rows {
			l.Rows[i] = map[string]any{}
			for k, v := range row {
				if n, ok := names[strings.TrimPrefix(k, "field_")]; ok && strings.HasPrefix(k, "field_") {
					k = n
				}
				l.Rows[i][k] = v
			}
		}
		s.Layout = &l
	}
	return s, nil
}

// modify changes the current template as the user asks.
func (a *Agent) modify(ctx context.Context, s State) (State, error) {
	if s.Turn.Intent == "" { // a fallback: R1 took it for a change
		s.Turn.Intent = IntentModify
	}
	if s.JRXML == "" && s.Template != "" {
		s.JRXML = s.Template
	}
	if a.model == nil {
		s.Turn.needsModel(s.Turn.say("Changing the template", "修改模板"), "")
		return s, nil
	}
	if s.JRXML == "" {
		s.Turn.Reply = s.Turn.say("There is no template yet: describe the report you want, or upload a form.", "还没有模板：请描述想要的报表，或上传表单。")
		return s, nil
	}
	pins := append(a.contextPins(s), convo.Pin{Key: "current_jrxml", Content: s.JRXML})
	msgs, fits, err := a.messagesFit(ctx, &s, prompt("modification.md"), pins)
	if err != nil {
		return s, err
	}
	if !fits {
		// A template too long for the prompt budget is changed in
		// windows, never cut and replaced whole.
		out, err := a.editByWindows(ctx, &s, s.JRXML, s.Turn.Text, a.contextPins(s).Remove("uploaded_template"))
		if err != nil {
			a.log.Warn("report: changing the template by windows", "err", err)
			s.Turn.Reply = s.Turn.say("The template is too long to send whole, and changing it piece by piece did not give a well-formed template; nothing was changed.", "模板太长，无法整体发送给模型；分段修改后的模板格式不正确，未作修改。")
			return s, nil
		}
		s.JRXML = out
		return s, nil
	}
	out, err := a.write(ctx, kindDraft, msgs)
	if err != nil {
		return s, fmt.Errorf("changing the template: %w", err)
	}
	if x := extractXML(out); strings.Contains(x, "<jasperReport") {
		s.JRXML = x
	} else {
		s.Turn.Reply = s.Turn.say("The model did not answer with a template; nothing was changed.", "模型没有给出模板，未作修改。")
	}
	return s, nil
}

// consult answers a question about report design with the model.
func (a *Agent) consult(ctx context.Context, s State) (State, error) {
	if a.model == nil {
		s.Turn.needsModel(s.Turn.say("Answering questions", "回答问题"), "")
		return s, nil
	}
	var pins convo.Pins
	if a.cfg.Templates != nil {
		var b strings.Builder
		for _, d := range a.cfg.Templates.Search(s.Turn.Text, 2) {
			fmt.Fprintf(&b, "%s (fields: %s)\n", d.Title, strings.Join(d.Fields, ", "))
		}
		if b.Len() > 0 {
			pins = append(pins, convo.Pin{Key: "similar_templates", Content: b.String()})
		}
	}
	msgs, err := a.messages(ctx, &s, prompt("consult.md"), pins)
	if err != nil {
		return s, err
	}
	out, err := a.write(ctx, graph.KindToken, msgs)
	if err != nil {
		return s, fmt.Errorf("answering: %w", err)
	}
	s.Turn.Reply = strings.TrimSpace(out)
	return s, nil
}

// undo goes back to the design of the newest finished turn whose revision
// is the one before the current: the thread's checkpoints are the history,
// so undo goes back as far as the thread goes.
func (a *Agent) undo(ctx context.Context, s State) (State, error) {
	prev, err := a.previous(ctx, graph.Thread(ctx), s.Revision-1)
	if err != nil {
		return s, err
	}
	if prev == nil {
		s.Turn.Reply = s.Turn.say("There is nothing to undo.", "没有可撤销的修改。")
		s.Turn.Unchanged = true
		return s, nil
	}
	s.Design, s.Revision, s.Saved, s.Final = prev.Design, prev.Revision, prev.Saved, prev.Final
	s.Turn.Reply = s.Turn.say(fmt.Sprintf("Undone: back to revision %d.", s.Revision), fmt.Sprintf("已撤销，回到第 %d 次修改。", s.Revision))
	return s, nil
}

// previous finds the state of the newest finished turn of thread at
// revision rev.
func (a *Agent) previous(ctx context.Context, thread string, rev int) (*State, error) {
	if a.saver == nil || thread == "" || rev < 1 {
		return nil, nil
	}
	// The newest checkpoints first, reading further back only when the
	// revision is not among them.
	for limit := 64; ; limit *= 8 {
		cps, err := a.saver.List(ctx, thread, limit)
		if err != nil {
			return nil, fmt.Errorf("reading the history for undo: %w", err)
		}
		for _, cp := range cps {
			if len(cp.Next) > 0 || cp.Interrupt != nil {
				continue
			}
			var old State
			if err := json.Unmarshal(cp.State, &old); err != nil {
				return nil, fmt.Errorf("reading checkpoint %s for undo: %w", cp.ID, err)
			}
			if old.Revision == rev {
				return &old, nil
			}
		}
		if len(cps) < limit {
			return nil, nil
		}
	}
}

// reset clears the design and the conversation; the thread, its title and
// its history of checkpoints stay (so even a reset can be undone).
func (a *Agent) reset(_ context.Context, s State) (State, error) {
	var history []llm.Message
	if s.Turn.Text != "" {
		history = []llm.Message{llm.User(s.Turn.Text)}
	}
	s = State{Title: s.Title, History: history, Revision: s.Revision + 1, Version: s.Version, Turn: Turn{Text: s.Turn.Text, Intent: intentReset, By: s.Turn.By, Zh: s.Turn.Zh}}
	s.Turn.Reply = s.Turn.say("Started over: the design and the conversation are cleared.", "已重置：设计和对话都已清空。")
	return s, nil
}

// saveSession counts a change of the template as a new revision; the
// thread's checkpoint keeps the session.
func (a *Agent) saveSession(_ context.Context, s State) (State, error) {
	h := hash(s.JRXML)
	if h != s.Saved && s.Turn.Intent != IntentUndo {
		s.Revision++
	}
	s.Saved = h
	return s, nil
}

// validate runs the structural checks, the schema when configured, the
// check that a template made from a form keeps the form's title, labels
// and table headers, and the comparison with the uploaded image when there
// is one.
func (a *Agent) validate(ctx context.Context, s State) (State, error) {
	s.Turn.Problems, s.Turn.SSIM = nil, 0
	doc, err := jrxml.Parse([]byte(s.JRXML))
	if err != nil {
		var p *jrxml.Problem
		if !errors.As(err, &p) {
			return s, fmt.Errorf("validating: %w", err)
		}
		s.Turn.Problems = []jrxml.Problem{*p}
		s.Turn.Status = statusFail
		return s, nil
	}
	ps := jrxml.Errors(doc.Check())
	if a.cfg.Schema != nil {
		xs, err := a.cfg.Schema.Validate(ctx, doc)
		if err != nil {
			return s, fmt.Errorf("validating against the schema: %w", err)
		}
		ps = append(ps, jrxml.Errors(xs)...)
	}
	// A template made from a form keeps the form's title, most of its
	// labels and its tables' headers; a later change may drop them, as
	// the user asked.
	if f, ok := formTextOf(s.Layout); ok && s.Turn.Intent == intentGenerate {
		ps = append(ps, fidelityProblems(doc, f)...)
	}
	if len(ps) == 0 && s.Source != nil && s.Source.Kind == kindImage {
		res, worst, err := a.similarity(ctx, s)
		if err != nil {
			a.log.Warn("report: comparing with the upload", "err", err)
		} else {
			s.Turn.SSIM = res.SSIM
			if threshold := a.ssim(ctx); !res.Passes(threshold) {
				msg := fmt.Sprintf("the rendering looks too unlike the uploaded form: SSIM %.2f over the form, below %.2f; the %s differs most", res.SSIM, threshold, worst)
				if res.SSIM >= threshold {
					msg = fmt.Sprintf("part of the uploaded form is missing from the rendering: the %s of the form scores below %.2f", worst, threshold/2)
				}
				ps = append(ps, jrxml.Problem{Element: "jasperReport", Line: 1, Severity: jrxml.Error, Check: "ssim",
					Message: msg, Hint: "draw every part of the form (its title, labels and tables) where the form has it"})
			}
		}
	}
	s.Turn.Problems = ps
	s.Turn.Status = statusPass
	if len(ps) > 0 {
		s.Turn.Status = statusFail
	}
	return s, nil
}

// explainError puts the problems into words with the model.
func (a *Agent) explainError(ctx context.Context, s State) (State, error) {
	if a.model == nil {
		return s, nil
	}
	out, err := a.ask(ctx, []llm.Message{llm.System(prompt("explain_error.md")), llm.User(problemText(s.Turn.Problems))})
	if err != nil {
		return s, fmt.Errorf("explaining the problems: %w", err)
	}
	s.Turn.Explanation = out
	return s, nil
}

// correct asks the model to fix the template. A correction that changes
// nothing costs two of the retries (see correctionCost). Without a model
// the loop ends.
func (a *Agent) correct(ctx context.Context, s State) (State, error) {
	if a.model == nil {
		// The loop ends; finalize still records the version and its problems.
		s.Turn.Unfixed = true
		s.Turn.modelNeeded(s.Turn.say("Correcting the template", "自动修正模板"), "")
		return s, nil
	}
	problems := problemText(s.Turn.Problems)
	pins := append(a.contextPins(s),
		convo.Pin{Key: "current_jrxml", Content: s.JRXML},
		convo.Pin{Key: "problems", Content: problems})
	if s.Turn.Explanation != "" {
		pins = append(pins, convo.Pin{Key: "explanation", Content: s.Turn.Explanation})
	}
	var past strings.Builder
	for _, c := range a.errorKB.Search(problems, 3) {
		fmt.Fprintf(&past, "Error: %s\nFix: %s\n\n", c.Title, c.Text)
	}
	if past.Len() > 0 {
		pins = append(pins, convo.Pin{Key: "past_fixes", Content: past.String()})
	}
	msgs := []llm.Message{llm.System(prompt("correction.md") + renderPins(pins)), llm.User("Fix the template.")}
	out, err := a.write(ctx, kindDraft, msgs)
	if err != nil {
		return s, fmt.Errorf("correcting the template: %w", err)
	}
	fixed := extractXML(out)
	s.Turn.Corrections++
	s.Turn.Unfixed = strings.TrimSpace(fixed) == strings.TrimSpace(s.JRXML) || !strings.Contains(fixed, "<jasperReport")
	if !s.Turn.Unfixed {
		s.Turn.LastError = &errorCase{Error: firstProblem(s.Turn.Problems), Fix: s.Turn.Explanation}
		s.JRXML = fixed
	}
	spent, bound := a.retries(ctx)
	graph.Emit(ctx, graph.KindStatus, fmt.Sprintf("correction %d (%d of %d retries spent)", s.Turn.Corrections, min(spent+a.correctionCost(s), bound), bound))
	return s, nil
}

// finalize ends the turn: a changed template that passed becomes the
// final one and every change is recorded as a version; a failed
// correction loop leaves its context for the next message.
func (a *Agent) finalize(ctx context.Context, s State) (State, error) {
	t := &s.Turn
	thread := graph.Thread(ctx)
	switch {
	case t.Intent == intentReset || t.Intent == intentConsult || t.NeedsModel || t.Unchanged:
	case t.Intent == intentPreview || t.Intent == intentPDF || t.Intent == intentJRXML:
		t.Reply = a.exportReply(s, thread)
	case s.JRXML == "":
		if t.Reply == "" {
			t.Reply = t.say("There is no template yet.", "还没有模板。")
		}
	default:
		if t.Status == statusFail {
			spent, _ := a.retries(ctx)
			s.PendingFailure = &FailureContext{Error: problemText(t.Problems), JRXML: s.JRXML, Retry: spent, Corrections: t.Corrections}
		} else {
			s.Final = s.JRXML
			if t.LastError != nil && t.Corrections > 0 {
				if err := a.store.AddErrorCase(ctx, *t.LastError); err != nil {
					return s, err
				}
				a.errorKB.Add(Doc{Title: t.LastError.Error, Text: t.LastError.Fix})
			}
		}
		// One version per change: a template already recorded as the
		// last version is not recorded again.
		if h := hash(s.JRXML); h != s.Versioned || s.Version == 0 {
			v, err := a.store.AddVersion(ctx, graph.StepKey(ctx), Version{Thread: thread, Created: time.Now(), Intent: t.Intent, Status: t.Status, SSIM: t.SSIM, JRXML: s.JRXML})
			if err != nil {
				return s, err
			}
			s.Version, s.Versioned = v, h
		}
		t.Reply = strings.TrimSpace(t.Reply + "\n\n" + a.resultReply(s, thread))
	}
	if t.Reply != "" {
		s.History = append(s.History, llm.Assistant(t.Reply))
	}
	return s, nil
}

// resultReply says how the turn's template came out.
func (a *Agent) resultReply(s State, thread string) string {
	t := &s.Turn
	base := routesBase + "threads/" + server.ThreadID(thread)
	if t.Status == statusFail {
		en, zh := fmt.Sprintf("Version %d does not pass validation", s.Version), fmt.Sprintf("第 %d 版未通过验证", s.Version)
		if t.Corrections > 0 {
			en, zh = fmt.Sprintf("Version %d does not pass validation after %d corrections", s.Version, t.Corrections), fmt.Sprintf("第 %d 版经过 %d 次修正仍未通过验证", s.Version, t.Corrections)
			if t.Corrections == 1 {
				en = fmt.Sprintf("Version %d does not pass validation after 1 correction", s.Version)
			}
		}
		return t.say(fmt.Sprintf("%s:\n%s\nYour next message will take this into account.\nPreview: %s/preview.png", en, problemText(t.Problems), base),
			fmt.Sprintf("%s：\n%s\n下一条消息会带上这些问题。\n预览：%s/preview.png", zh, problemText(t.Problems), base))
	}
	sim := ""
	if t.SSIM > 0 {
		sim = fmt.Sprintf(" (SSIM %.2f)", t.SSIM)
	}
	return t.say(fmt.Sprintf("Version %d passes validation%s.\nPreview: %s/preview.png · JRXML: %s/versions/%d.jrxml · PDF: %s/versions/%d.pdf", s.Version, sim, base, base, s.Version, base, s.Version),
		fmt.Sprintf("第 %d 版已通过验证%s。\n预览：%s/preview.png · JRXML：%s/versions/%d.jrxml · PDF：%s/versions/%d.pdf", s.Version, sim, base, base, s.Version, base, s.Version))
}

// exportReply gives the links of a preview or an export.
func (a *Agent) exportReply(s State, thread string) string {
	t := &s.Turn
	if s.JRXML == "" {
		return t.say("There is no template yet: describe the report you want, or upload a form.", "还没有模板：请描述想要的报表，或上传表单。")
	}
	base := routesBase + "threads/" + server.ThreadID(thread)
	switch t.Intent {
	case intentPDF:
		return t.say("The PDF: "+base+"/current.pdf", "PDF 文件："+base+"/current.pdf")
	case intentJRXML:
		return t.say("The template: "+base+"/current.jrxml", "模板文件："+base+"/current.jrxml")
	}
	pages := 0
	if res, err := layOut(s.JRXML, s.Layout.formRows()); err == nil {
		pages = len(res.Pages)
	}
	return t.say(fmt.Sprintf("The preview (%d pages with sample rows): %s/preview.png", pages, base),
		fmt.Sprintf("预览（示例数据，共 %d 页）：%s/preview.png", pages, base))
}

// messages builds the model's view: the system prompt with the pins, and
// the conversation through convo, within the prompt budget (older turns
// summarised).
func (a *Agent) messages(ctx context.Context, s *State, system string, pins convo.Pins) ([]llm.Message, error) {
	msgs, _, err := a.messagesFit(ctx, s, system, pins)
	return msgs, err
}

// messagesFit is messages, and whether they fit the prompt budget even
// with the older turns summarised.
func (a *Agent) messagesFit(ctx context.Context, s *State, system string, pins convo.Pins) ([]llm.Message, bool, error) {
	v, err := a.view.Build(ctx, s.History, pins, &s.Summary)
	if err != nil {
		return nil, false, fmt.Errorf("building the model's view: %w", err)
	}
	msgs := v.Messages
	if len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
		msgs[0].Content = strings.TrimSpace(system + "\n\n" + msgs[0].Content)
	} else {
		msgs = append([]llm.Message{llm.System(system)}, msgs...)
	}
	if len(msgs) == 1 {
		msgs = append(msgs, llm.User(s.Turn.Text))
	}
	return msgs, !v.OverBudget, nil
}

// contextPins are what the prompts of generation, change and correction
// carry: the form's labels, an uploaded template, what retrieve found and
// the failure the last turn left.
func (a *Agent) contextPins(s State) convo.Pins {
	var pins convo.Pins
	if s.Turn.Carry != nil {
		after := "."
		switch n := s.Turn.Carry.Corrections; n {
		case 0:
		case 1:
			after = " after 1 correction."
		default:
			after = fmt.Sprintf(" after %d corrections.", n)
		}
		pins = append(pins, convo.Pin{Key: "pending_failure_context", Content: "The last attempt did not pass validation" + after + " Its problems:\n" + s.Turn.Carry.Error})
	}
	if s.Layout != nil && len(s.Layout.Labels) > 0 {
		pins = append(pins, convo.Pin{Key: "form_labels", Content: strings.Join(s.Layout.Labels, " | ")})
	}
	if s.Template != "" {
		// Whole: one too long for the budget is sent in windows.
		pins = append(pins, convo.Pin{Key: "uploaded_template", Content: s.Template})
	}
	if s.Turn.Retrieved != "" {
		pins = append(pins, convo.Pin{Key: "retrieved_context", Content: s.Turn.Retrieved})
	}
	// An example is shown whole or not at all: at most a quarter of the
	// prompt budget.
	if s.Turn.KBTemplate != "" && s.Template == "" && 4*a.tokens(s.Turn.KBTemplate) <= promptBudget(a.cfg.ContextTokens) {
		pins = append(pins, convo.Pin{Key: "similar_template", Content: s.Turn.KBTemplate})
	}
	return pins
}

// renderPins writes pins as convo does, for a prompt built without the
// conversation.
func renderPins(pins convo.Pins) string {
	var b strings.Builder
	for _, p := range pins {
		fmt.Fprintf(&b, "\n\n<%s>\n%s\n</%s>", p.Key, p.Content, p.Key)
	}
	return b.String()
}

// problemText lists problems one a line.
func problemText(ps []jrxml.Problem) string {
	var b strings.Builder
	for i, p := range ps {
		if i == 10 {
			fmt.Fprintf(&b, "… and %d more\n", len(ps)-10)
			break
		}
		if p.Element == "" { // a declaration, or the whole file
			fmt.Fprintf(&b, "- line %d: %s", p.Line, p.Message)
		} else {
			fmt.Fprintf(&b, "- line %d <%s>: %s", p.Line, p.Element, p.Message)
		}
		if p.Hint != "" {
			fmt.Fprintf(&b, " (%s)", p.Hint)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstProblem(ps []jrxml.Problem) string {
	if len(ps) == 0 {
		return ""
	}
	return "<" + ps[0].Element + ">: " + ps[0].Message
}

func hash(s string) string {
	if s == "" {
		return ""
	}
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	return clip(s, n)
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func appendNew(list []string, xs ...string) []string {
	for _, x := range xs {
		found := false
		for _, y := range list {
			if y == x {
				found = true
				break
			}
		}
		if !found {
			list = append(list, x)
		}
	}
	return list
}
