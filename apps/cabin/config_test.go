package cabin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capabilities are the intents of seed §26, as the default set names them.
var capabilities = []string{
	// §26.1 customer service
	"cs_query_order", "cs_query_logistics", "cs_cancel_order", "cs_refund", "cs_transfer_human",
	// §26.2 cabin
	"cabin_nav_to", "cabin_nav_cancel", "cabin_ac_on", "cabin_ac_off", "cabin_set_ac", "cabin_fan_up", "cabin_fan_down",
	"cabin_defog_front", "cabin_defog_rear", "cabin_window_open", "cabin_window_close", "cabin_sunroof_open", "cabin_sunroof_close",
	"cabin_door_lock", "cabin_door_unlock", "cabin_play_music", "cabin_pause_music", "cabin_prev_song", "cabin_next_song",
	"cabin_volume_up", "cabin_volume_down", "cabin_volume_mute", "cabin_lights_on", "cabin_lights_off",
	"cabin_seat_heat_on", "cabin_seat_heat_off", "cabin_mirror_fold", "cabin_mirror_unfold", "cabin_wiper_on", "cabin_wiper_off",
}

// Both default sets cover every intent of §26 with keywords, examples, a
// form, a reply and a tool that exists.
func TestDefaultConfigs(t *testing.T) {
	for _, locale := range []string{localeChinese, localeEnglish} {
		t.Run(locale, func(t *testing.T) {
			app, err := New(context.Background(), Options{Locale: locale, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if len(app.cat.ids) != len(capabilities) {
				t.Errorf("%d intents, want %d", len(app.cat.ids), len(capabilities))
			}
			for _, id := range capabilities {
				in := app.cat.intents[id]
				switch {
				case in == nil:
					t.Errorf("no intent %s", id)
				case len(in.Keywords) == 0 || len(in.Examples) < 4:
					t.Errorf("%s: %d keywords, %d examples", id, len(in.Keywords), len(in.Examples))
				case in.replies.Done == "" || in.replies.Summary == "":
					t.Errorf("%s: no done or summary reply", id)
				case !registered(app, in.action.Plugin):
					t.Errorf("%s: no tool %s in the registry", id, toolName(in.action.Plugin))
				}
			}
			if app.cfg.Domain.Locale != locale {
				t.Errorf("locale %q", app.cfg.Domain.Locale)
			}
		})
	}
}

// registered reports whether a tool of app carries out plugin.
func registered(app *App, plugin string) bool {
	_, err := app.tool(plugin)
	return err == nil
}

// A broken file stops start-up with file, line and reason.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		file     string
		old, new string // the edit to the default file; the line is where new is
		reason   string
		atNew    bool // the error is at the line of new (else at line)
		line     string
	}{
		{"unknown action", fileDomain, "action: action.window.open", "action: action.window.fly", `intent "cabin_window_open": unknown action "action.window.fly"`, true, ""},
		{"duplicate intent", fileDomain, "- id: cabin_nav_cancel", "- id: cabin_nav_to", `duplicate intent "cabin_nav_to"`, true, ""},
		{"unknown field", fileDomain, "    label: 打开车窗", "    lable: 打开车窗", "field lable not found", true, ""},
		{"missing form", fileForms, "  cabin_mirror_fold: {}\n", "", `missing form for intent "cabin_mirror_fold"`, false, "forms:"},
		{"bad pattern", fileForms, `'(?P<order_id>[a-z]{1,2}\d{3,10})'`, `'(?P<order_id>[a-z'`, "bad regular expression", true, ""},
		{"bad threshold order", fileRules, "route_to_cloud_threshold: 0.75", "route_to_cloud_threshold: 1.8", "route_to_cloud_threshold 1.8 must be below execute_threshold 1.65", true, ""},
		{"threshold out of range", fileRules, "clarify_margin_threshold: 0.12", "clarify_margin_threshold: -0.5", "clarify_margin_threshold -0.5 out of range", true, ""},
		{"bad remote classifier", fileRules, "routing:\n  execute_threshold", "remote_classifier: {url: \"localhost:9000\"}\nrouting:\n  execute_threshold", `remote classifier url "localhost:9000": want an http or https URL`, true, ""},
		{"unknown confirmation intent", fileRules, "intents: [cs_cancel_order, cs_refund]", "intents: [cs_cancel_everything]", `confirmation: unknown intent "cs_cancel_everything"`, true, ""},
		{"unknown template intent", fileWorkflows, "intents: [cabin_window_open, cabin_set_ac]", "intents: [cabin_window_open, cabin_fly]", `unknown intent "cabin_fly"`, true, ""},
		{"bad operator", fileWorkflows, "operator: equals", "operator: is", `condition operator "is"`, true, ""},
		{"syntax", fileResponses, "  clarify_or: 还是", "  clarify_or: [还是", "did not find expected", true, ""},
		{"scanner", fileResponses, "  clarify_or: 还是", "  clarify_or: @还是", "found character that cannot start any token", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := defaults.ReadFile("config/zh-CN/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.old) {
				t.Fatalf("%s has no %q", c.file, c.old)
			}
			edited := strings.Replace(string(b), c.old, c.new, 1)
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			at := c.new
			if !c.atNew {
				at = c.line
			}
			line := lineOf(edited, at)
			_, err = loadConfig(localeChinese, dir)
			if err == nil {
				t.Fatal("no error")
			}
			prefix := fmt.Sprintf("%s:%d: ", c.file, line)
			if !errors.Is(err, errConfig) || !strings.Contains(err.Error(), prefix) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("error %q, want %q with %q", err, prefix, c.reason)
			}
		})
	}
}

// lineOf is the number of the line where the last s starts in text.
func lineOf(text, s string) int {
	i := strings.LastIndex(text, s)
	if i < 0 {
		return 0
	}
	return strings.Count(text[:i], "\n") + 1
}

// An action whose plugin nobody registered stops New, with the line.
func TestUnknownPlugin(t *testing.T) {
	dir := t.TempDir()
	b, _ := defaults.ReadFile("config/zh-CN/" + fileActions)
	edited := strings.Replace(string(b), "plugin: plugin.cabin.wiper.off", "plugin: plugin.cabin.wiper.fly", 1)
	if err := os.WriteFile(filepath.Join(dir, fileActions), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{ConfigDir: dir, Logger: quiet})
	prefix := fmt.Sprintf("%s:%d: ", fileActions, lineOf(edited, "plugin.cabin.wiper.fly"))
	if !errors.Is(err, errConfig) || err == nil || !strings.Contains(err.Error(), prefix+`action "action.wiper.off": no plugin "plugin.cabin.wiper.fly"`) {
		t.Errorf("error %v, want one at %s", err, prefix)
	}
}

func TestUnknownLocale(t *testing.T) {
	if _, err := loadConfig("fr", ""); !errors.Is(err, errConfig) {
		t.Errorf("error %v", err)
	}
}
