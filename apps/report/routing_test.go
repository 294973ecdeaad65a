package report

import (
	"bufio"
	"context"
	"os"
	"sort"
	"strings"
	"testing"
)

// utterance is one labelled line of testdata/utterances.tsv.
type utterance struct{ want, text string }

func readUtterances(t *testing.T) []utterance {
	t.Helper()
	f, err := os.Open("testdata/utterances.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var us []utterance
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("utterances.tsv: %q has no tab", line)
		}
		us = append(us, utterance{want, text})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return us
}

// TestRoutingSet routes the labelled report-designer utterances, without
// a model, on a thread that has a template: no question or change ever
// goes to a new report, what the engine decides alone is right, and what
// it is not sure of is asked about. It prints the figures per intent.
func TestRoutingSet(t *testing.T) {
	a, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	us := readUtterances(t)
	if len(us) < 60 {
		t.Fatalf("%d utterances, want at least 60", len(us))
	}
	type tally struct{ n, right, asked, wrong int }
	per := map[string]*tally{}
	var right, asked, wrong int
	for _, u := range us {
		s := State{Design: Design{JRXML: minimalJRXML}, Turn: Turn{Text: u.text, Zh: hasHan(u.text)}}
		got, err := a.decideIntent(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if got.Turn.Intent == "" && got.Turn.By == byFallback {
			got.Turn.Intent = IntentModify // R1 with a template
		}
		tl := per[u.want]
		if tl == nil {
			tl = &tally{}
			per[u.want] = tl
		}
		tl.n++
		switch {
		case got.Turn.By == byClarify:
			tl.asked++
			asked++
			if got.Turn.Reply == "" {
				t.Errorf("%q: asked with no question", u.text)
			}
		case got.Turn.Intent == u.want:
			tl.right++
			right++
		default:
			tl.wrong++
			wrong++
			t.Logf("wrong: %q → %q by %s, labelled %s", u.text, got.Turn.Intent, got.Turn.By, u.want)
		}
		if (u.want == intentConsult || u.want == IntentModify) && got.Turn.Intent == intentGenerate {
			t.Errorf("%q (%s) routed to a new report", u.text, u.want)
		}
	}
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		tl := per[k]
		t.Logf("%-18s %2d utterances: %2d right, %2d asked, %2d wrong (accuracy %.2f of those decided)", k, tl.n, tl.right, tl.asked, tl.wrong, float64(tl.right)/float64(max(1, tl.right+tl.wrong)))
	}
	t.Logf("all: %d utterances, %d right, %d asked, %d wrong", len(us), right, asked, wrong)
	// Floors from the results (67 right, 1 asked, 0 wrong).
	if wrong > 2 || right < len(us)-5 {
		t.Errorf("%d right, %d asked, %d wrong of %d: below the floors (at most 2 wrong, at least %d right)", right, asked, wrong, len(us), len(us)-5)
	}
}

const minimalJRXML = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20"><title><band height="40"><staticText><reportElement x="0" y="0" width="555" height="30"/><text><![CDATA[销售出库单]]></text></staticText></band></title></jasperReport>`
