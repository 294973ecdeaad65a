package cabin

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/intent"
)

// languageOwn are the settings each language has for itself: the
// routing thresholds (the classifier's scores differ between characters
// and words), lengths counted in runes, and the English names of the
// sample orders' items, which are Chinese already.
var languageOwn = []string{"Rules.Routing", "Workflows.Split.MinRunes", "Rules.Social.FollowUpRunes", "Domain.Locale", "Responses.Labels[item]"}

// TestConfigParity: the Chinese and the English configurations are
// equally complete. Every intent, action, slot, form, question, reply,
// error, label, rule and workflow of one has its counterpart in the
// other, with the same ids, slots, risks, bounds and conditions; a list
// of words or a text given on one side is given on the other.
func TestConfigParity(t *testing.T) {
	zh, err := loadConfig(localeChinese, "")
	if err != nil {
		t.Fatal(err)
	}
	en, err := loadConfig(localeEnglish, "")
	if err != nil {
		t.Fatal(err)
	}
	var gaps []string
	compareShape("", reflect.ValueOf(*zh), reflect.ValueOf(*en), func(path, msg string) {
		gaps = append(gaps, path+": "+msg)
	})
	for _, g := range gaps {
		t.Error(g)
	}
	// The walk itself must see a gap: one reply taken away from English.
	en.Responses.Intents["cs_refund"] = intentResponses{}
	n := 0
	compareShape("", reflect.ValueOf(*zh), reflect.ValueOf(*en), func(string, string) { n++ })
	if n == 0 {
		t.Error("compareShape found no gap where English lacks cs_refund's replies")
	}
}

// compareShape walks a (Chinese) and b (English) side by side and
// reports where one has what the other lacks.
func compareShape(path string, a, b reflect.Value, report func(path, msg string)) {
	if own(path) {
		return
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			report(path, sides(!a.IsNil()))
			return
		}
		if !a.IsNil() {
			compareShape(path, a.Elem(), b.Elem(), report)
		}
	case reflect.Struct:
		if a.Type() == reflect.TypeFor[intent.Phrases]() {
			if pa, pb := a.Interface().(intent.Phrases), b.Interface().(intent.Phrases); phraseCount(pa) > 0 != (phraseCount(pb) > 0) {
				report(path, sides(phraseCount(pa) > 0))
			}
			return
		}
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if f.IsExported() {
				compareShape(join2(path, f.Name), a.Field(i), b.Field(i), report)
			}
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range append(a.MapKeys(), b.MapKeys()...) {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			k := keys[name]
			va, vb := a.MapIndex(k), b.MapIndex(k)
			p := fmt.Sprintf("%s[%s]", path, name)
			switch {
			case own(p):
			case !va.IsValid() || !vb.IsValid():
				report(p, sides(va.IsValid()))
			default:
				compareShape(p, va, vb, report)
			}
		}
	case reflect.Slice:
		if a.Type().Elem().Kind() != reflect.Struct {
			if (a.Len() > 0) != (b.Len() > 0) {
				report(path, sides(a.Len() > 0))
			}
			if a.Type().Elem().Kind() == reflect.Int && !reflect.DeepEqual(a.Interface(), b.Interface()) {
				report(path, fmt.Sprintf("%v in zh-CN, %v in en", a.Interface(), b.Interface()))
			}
			return
		}
		ka, kb := byKey(a), byKey(b)
		if ka == nil || kb == nil { // no key: by place
			if a.Len() != b.Len() {
				report(path, fmt.Sprintf("%d in zh-CN, %d in en", a.Len(), b.Len()))
				return
			}
			for i := range a.Len() {
				compareShape(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), report)
			}
			return
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			seen := map[string]bool{}
			for _, m := range []map[string]reflect.Value{ka, kb} {
				for k := range m {
					if !seen[k] {
						seen[k] = true
						if !yield(k) {
							return
						}
					}
				}
			}
		}) {
			va, okA := ka[k]
			vb, okB := kb[k]
			p := fmt.Sprintf("%s[%s]", path, k)
			if !okA || !okB {
				report(p, sides(okA))
				continue
			}
			compareShape(p, va, vb, report)
		}
	case reflect.String:
		if (a.Len() > 0) != (b.Len() > 0) {
			report(path, sides(a.Len() > 0))
		}
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		if !a.Equal(b) {
			report(path, fmt.Sprintf("%v in zh-CN, %v in en", a.Interface(), b.Interface()))
		}
	}
}

// byKey maps the elements of a slice of structs by the field that names
// them (ID, Name, Act, Intent, or Source and Target), or nil.
func byKey(s reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	for i := range s.Len() {
		e := s.Index(i)
		var k string
		for _, f := range []string{"ID", "Name", "Act"} {
			if v := e.FieldByName(f); v.IsValid() && v.Kind() == reflect.String {
				k = v.String()
				break
			}
		}
		if src, dst := e.FieldByName("Source"), e.FieldByName("Target"); k == "" && src.IsValid() && dst.IsValid() {
			k = src.String() + "→" + dst.String()
		}
		if k == "" {
			return nil
		}
		if _, dup := out[k]; dup {
			k = fmt.Sprintf("%s#%d", k, i)
		}
		out[k] = e
	}
	return out
}

// own reports whether path is a setting of each language's own.
func own(path string) bool {
	return slices.ContainsFunc(languageOwn, func(p string) bool { return path == p || strings.HasPrefix(path, p+".") })
}

func phraseCount(p intent.Phrases) int { return len(p.Exact) + len(p.Contains) + len(p.Regex) }

func join2(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// sides says which side has it.
func sides(inChinese bool) string {
	if inChinese {
		return "only in zh-CN"
	}
	return "only in en"
}
