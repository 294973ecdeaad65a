package ui_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/server/ui"
)

// TestBrowserCabin drives the cabin assistant from the page, served as
// `loom serve` serves it: a conditional order request stops at a confirm
// card, Accept cancels the order (seen through the cabin's own API), and a
// slot question is answered by typing. The assistant's replies show as
// bubbles, with its large state folded away. The page is in English and
// sends its language as the run's locale, which the cabin takes: the
// Chinese messages are answered in English, the typed answer to the slot
// question too (it goes through /v1/chat/completions with the same
// locale). Switched to Chinese, the page's next run and typed answer are
// answered in Chinese.
func TestBrowserCabin(t *testing.T) {
	needChromium(t)
	base := startCabin(t)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("cabin")

	const pending = `.card.confirm[data-state="pending"]`
	b.send("查订单A123，如果没发货就取消")
	b.do("wait for the confirm card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)))
	if q := b.text(pending + ` .question`); !strings.Contains(q, "Shall I cancel order A123") {
		t.Errorf("the card asks %q", q)
	}
	if got := b.text(`.card.tool-call code`); got != "plugin.order.query" {
		t.Errorf("the tool call card names %q", got)
	}
	b.shot("cabin-1-confirm.png")

	b.do("accept", chromedp.Click(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .bubble.reply`)))
	if got := b.text(`.run[data-status="done"] .bubble.reply`); !strings.Contains(got, "Order A123 is cancelled") {
		t.Errorf("the reply bubble says %q", got)
	}
	if open := eval[bool](b, `document.querySelector('.run[data-status="done"] .card.result details.state').open`); open {
		t.Error("the finished state is not folded")
	}
	var order struct {
		Status string `json:"status"`
	}
	getJSON(t, base+"/api/v1/cabin/orders/A123", &order)
	if order.Status != "cancelled" {
		t.Errorf("order A123 is %q after the card was accepted", order.Status)
	}
	b.shot("cabin-2-done.png")

	// A slot question is answered by typing the answer.
	b.send("导航")
	b.do("wait for the question", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)))
	if q := b.text(pending + ` .question`); !strings.Contains(q, "Where would you like to go") {
		t.Errorf("the slot question is %q", q)
	}
	b.send("去公司")
	b.do("wait for the answer", chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	replies := eval[[]string](b, `[...document.querySelectorAll('.bubble.reply')].map(b => b.textContent)`)
	if len(replies) != 2 || !strings.Contains(replies[1], "Navigating to 公司") {
		t.Errorf("reply bubbles %q", replies)
	}
	b.shot("cabin-3-slot.png")

	// On the Chinese page, in a new thread (this one knows where the
	// last trip went), the question and the typed answer's reply are in
	// Chinese.
	b.do("switch to Chinese", chromedp.Click(chromedp.CSS(`#lang`)))
	b.do("new thread", chromedp.Click(chromedp.CSS(`#new-thread`)))
	b.send("导航")
	b.do("wait for the question in Chinese", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)))
	if q := b.text(pending + ` .question`); !strings.Contains(q, "去哪里") {
		t.Errorf("the slot question on the Chinese page is %q", q)
	}
	b.send("去机场")
	b.do("wait for the answer in Chinese", chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	replies = eval[[]string](b, `[...document.querySelectorAll('.bubble.reply')].map(b => b.textContent)`)
	if len(replies) != 1 || !strings.Contains(replies[0], "开始导航去机场") {
		t.Errorf("reply bubbles after switching to Chinese %q", replies)
	}
	b.shot("cabin-4-slot-zh.png")
	b.checkConsole()
}

// startCabin serves the cabin agent, its own routes and the page on a
// loopback port, as loom serve does.
func startCabin(t *testing.T) string {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	var reg server.Registry
	if err := reg.Register(cabin.ServerAgent(cabin.ServerOptions{Logger: quiet})); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"), Logger: quiet, UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}
