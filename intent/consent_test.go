package intent_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/loomkit/loom/intent"
)

// consentReply is one labelled reply of testdata/consent.tsv.
type consentReply struct {
	kind string // yes, no, dressed, question, hedge or other
	want string // accepted, rejected or unclear
	text string
}

func readConsentCorpus(t testing.TB) []consentReply {
	t.Helper()
	f, err := os.Open("testdata/consent.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []consentReply
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.SplitN(line, "\t", 3)
		if len(cols) != 3 {
			t.Fatalf("consent.tsv:%d: want kind, verdict and reply separated by tabs", n)
		}
		out = append(out, consentReply{cols[0], cols[1], cols[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The labelled corpus: no refusal, no, question or hedge is accepted, no
// question or hedge is rejected, and at least 95% of the plain yeses are
// accepted.
func TestConsentCorpus(t *testing.T) {
	corpus := readConsentCorpus(t)
	if len(corpus) < 300 {
		t.Fatalf("%d labelled replies, want at least 300", len(corpus))
	}
	type tally struct{ n, accepted, rejected, unclear, agree int }
	byKind := map[string]*tally{}
	for _, r := range corpus {
		v := intent.ReadConsent(r.text)
		k := byKind[r.kind]
		if k == nil {
			k = &tally{}
			byKind[r.kind] = k
		}
		k.n++
		switch v.Consent {
		case intent.Accepted:
			k.accepted++
		case intent.Rejected:
			k.rejected++
		default:
			k.unclear++
		}
		if v.Consent.String() == r.want {
			k.agree++
		} else {
			t.Logf("%s %q: %s (%s), labelled %s", r.kind, r.text, v.Consent, v.Cue, r.want)
		}
		switch {
		case r.kind != "yes" && r.kind != "other" && v.Consent == intent.Accepted:
			t.Errorf("%s %q accepted (%s)", r.kind, r.text, v.Cue)
		case (r.kind == "question" || r.kind == "hedge") && v.Consent == intent.Rejected:
			t.Errorf("%s %q rejected (%s)", r.kind, r.text, v.Cue)
		}
	}
	var all tally
	for _, kind := range []string{"yes", "no", "dressed", "question", "hedge", "other"} {
		k := byKind[kind]
		if k == nil {
			t.Fatalf("no %s replies in the corpus", kind)
		}
		t.Logf("%-8s %3d: %3d accepted, %3d rejected, %3d unclear; %3d as labelled", kind, k.n, k.accepted, k.rejected, k.unclear, k.agree)
		all.n += k.n
		all.agree += k.agree
	}
	t.Logf("all      %3d: %3d as labelled (%.1f%%)", all.n, all.agree, 100*float64(all.agree)/float64(all.n))
	if y := byKind["yes"]; float64(y.accepted) < 0.95*float64(y.n) {
		t.Errorf("%d of %d plain yeses accepted, want at least 95%%", y.accepted, y.n)
	}
}

// The note is the reply without the yes or no it opens with; an unclear
// reply keeps the whole of it, and Err wraps ErrUnclear only then.
func TestConsentNote(t *testing.T) {
	for _, tc := range []struct {
		text    string
		consent intent.Consent
		note    string
	}{
		{"取消，周三不行", intent.Rejected, "周三不行"},
		{"no, too expensive", intent.Rejected, "too expensive"},
		{"不要 太贵了", intent.Rejected, "太贵了"},
		{"Reject: too early", intent.Rejected, "too early"},
		{"对不起，我不同意", intent.Rejected, "对不起，我不同意"},
		{"好的，谢谢", intent.Accepted, "谢谢"},
		{"  Yes please  ", intent.Accepted, ""},
		{"好的，开始吧", intent.Accepted, ""},
		{"好的，改到周三", intent.Unclear, "好的，改到周三"},
		{"可以吗？", intent.Unclear, "可以吗？"},
		{"", intent.Unclear, ""},
	} {
		v := intent.ReadConsent(tc.text)
		if v.Consent != tc.consent || v.Note != tc.note || v.Cue == "" {
			t.Errorf("ReadConsent(%q) = %+v, want %s with note %q and a cue", tc.text, v, tc.consent, tc.note)
		}
		if err := v.Err(); (err != nil) != (tc.consent == intent.Unclear) || (err != nil && !errors.Is(err, intent.ErrUnclear)) {
			t.Errorf("ReadConsent(%q).Err() = %v", tc.text, err)
		}
	}
}

// A Verdict is JSON with its consent spelled out, and reads back.
func TestVerdictJSON(t *testing.T) {
	v := intent.ReadConsent("取消，周三不行")
	b, err := json.Marshal(v)
	if err != nil || !strings.Contains(string(b), `"consent":"rejected"`) {
		t.Fatalf("%s, %v", b, err)
	}
	var back intent.Verdict
	if err := json.Unmarshal(b, &back); err != nil || back != v {
		t.Errorf("read back %+v, %v; want %+v", back, err, v)
	}
	if err := json.Unmarshal([]byte(`{"consent":"maybe"}`), &back); err == nil {
		t.Error(`consent "maybe" read without an error`)
	}
}

// Every phrase of consent.yml is in one act only and the file compiles:
// a reply of a known phrase alone is never unclear for want of a lexicon.
func TestConsentLexicon(t *testing.T) {
	for text, want := range map[string]intent.Consent{"确认": intent.Accepted, "不": intent.Rejected, "👍": intent.Accepted, "no problem": intent.Accepted} {
		if v := intent.ReadConsent(text); v.Consent != want {
			t.Errorf("ReadConsent(%q) = %+v, want %s", text, v, want)
		}
	}
}

func BenchmarkReadConsent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		intent.ReadConsent("对不起，我不同意，改到周三吧")
	}
}

// A cancel word the question asks about is not a no; every other no is.
func TestReadConsentTo(t *testing.T) {
	for _, tc := range []struct {
		question, reply string
		want            intent.Consent
	}{
		{"确认要取消订单 B456 吗？", "确认取消", intent.Accepted},
		{"确认要取消订单 B456 吗？", "好的，取消吧", intent.Accepted},
		{"确认要取消订单 B456 吗？", "不要取消", intent.Rejected},
		{"确认要取消订单 B456 吗？", "不要", intent.Rejected},
		{"确认要取消订单 B456 吗？", "取消", intent.Unclear},
		{"Shall I cancel order B456?", "yes, cancel it", intent.Accepted},
		{"Shall I cancel order B456?", "no, don't cancel", intent.Rejected},
		{"Shall I stop the navigation?", "stop", intent.Unclear},
		{"Approve the plan?", "yes, cancel it", intent.Unclear},
		{"", "确认取消", intent.Unclear},
	} {
		if v := intent.ReadConsentTo(tc.question, tc.reply); v.Consent != tc.want {
			t.Errorf("ReadConsentTo(%q, %q) = %+v, want %s", tc.question, tc.reply, v, tc.want)
		}
	}
}

// Any text gets a verdict without a panic; the note is a piece of the
// reply; a reply with a question mark is never a yes or a no.
func FuzzReadConsent(f *testing.F) {
	for _, r := range readConsentCorpus(f) {
		f.Add("", r.text)
	}
	f.Add("确认要取消订单吗？", "确认取消")
	f.Add("", "\xff好的\xfe, \u3000 ")
	f.Fuzz(func(t *testing.T, question, reply string) {
		v := intent.ReadConsentTo(question, reply)
		if !strings.Contains(reply, v.Note) || v.Cue == "" {
			t.Errorf("ReadConsentTo(%q, %q) = %+v: the note is not part of the reply, or no cue", question, reply, v)
		}
		if strings.ContainsAny(reply, "?？") && v.Consent != intent.Unclear {
			t.Errorf("ReadConsentTo(%q, %q) = %+v: a question answered", question, reply, v)
		}
	})
}
