package report

import (
	"context"
	"testing"

	"github.com/loomkit/loom/intent"
)

// TestLocalIntents: what the engine decides without a model, in Chinese
// and English; an unclear request is left to the model.
func TestLocalIntents(t *testing.T) {
	a, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{
		"撤销": IntentUndo, "undo": IntentUndo, "回退到上一个版本": IntentUndo,
		"重置": intentReset, "start over": intentReset,
		"预览报表": intentPreview, "preview": intentPreview,
		"导出 PDF": intentPDF, "export to pdf": intentPDF,
		"下载 JRXML": intentJRXML, "download the JRXML": intentJRXML,
		"帮我生成一个销售报表": intentGenerate, "create a report of sales by city": intentGenerate,
		"把标题字体改大": IntentModify, "JasperReports 里 $F 和 $P 有什么区别？": intentConsult,
	} {
		r, err := a.engine.Route(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		if r.Decision != intent.Execute || r.Intent != want {
			t.Errorf("%q: %s %s (score %.2f), want %s", text, r.Decision, r.Intent, r.Score, want)
		}
	}
}
