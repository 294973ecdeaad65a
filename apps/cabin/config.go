package cabin

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/tool"
)

// The seven configuration files, in the order they load.
const (
	fileDomain     = "domain.yml"
	fileActions    = "actions.yml"
	fileForms      = "forms.yml"
	fileResponses  = "responses.yml"
	fileRules      = "rules.yml"
	fileDialogActs = "dialog_acts.yml"
	fileWorkflows  = "workflows.yml"
)

// configFiles lists the files in load order.
var configFiles = []string{fileDomain, fileActions, fileForms, fileResponses, fileRules, fileDialogActs, fileWorkflows}

// Locales with an embedded default configuration.
const (
	localeChinese = "zh-CN"
	localeEnglish = "en"
)

//go:embed config
var defaults embed.FS

// Config is the assistant's configuration, read from the seven YAML files.
type Config struct {
	Domain     Domain
	Actions    Actions
	Forms      Forms
	Responses  Responses
	Rules      Rules
	DialogActs dialogActs
	Workflows  Workflows

	// roots are the files' YAML trees, for the line numbers of errors.
	roots map[string]*yaml.Node
}

// Domain (domain.yml) is the intent catalogue.
type Domain struct {
	// Locale names the language of the texts, e.g. zh-CN or en.
	Locale string `yaml:"locale"`
	// Intents are what the assistant can do.
	Intents []intentSpec `yaml:"intents"`
	// OutOfScope is the class of requests the assistant turns down.
	OutOfScope OutOfScope `yaml:"out_of_scope"`
}

// intentSpec is one intent of the catalogue.
type intentSpec struct {
	// ID names the intent (cabin_window_open).
	ID string `yaml:"id"`
	// Domain groups intents: cabin or customer_service.
	Domain string `yaml:"domain"`
	// Label is the intent's name in replies ("打开车窗").
	Label string `yaml:"label"`
	// Description is for people and for the model planner.
	Description string `yaml:"description"`
	// Action names the action in actions.yml that carries it out.
	Action string `yaml:"action"`
	// Keywords name the intent outright; Examples train the classifier
	// and the retrieval index.
	Keywords []string `yaml:"keywords"`
	// Examples: see Keywords.
	Examples []string `yaml:"examples"`
}

// OutOfScope is the out-of-scope class: examples of what the assistant
// does not do, trained like an intent; when it wins, the request is
// rejected.
type OutOfScope struct {
	ID       string   `yaml:"id"`
	Examples []string `yaml:"examples"`
}

// Actions (actions.yml) bind actions to tools, by plugin_id.
type Actions struct {
	Actions []actionSpec `yaml:"actions"`
}

// actionSpec is one action: the plugin_id of the tool that runs it and
// its risk.
type actionSpec struct {
	// ID names the action.
	ID string `yaml:"id"`
	// Plugin is the plugin_id that runs the action: the tool named
	// ToolName(Plugin).
	Plugin string `yaml:"plugin"`
	// Risk is low, medium or high; rules.yml may require confirmation of
	// write tools by risk.
	Risk string `yaml:"risk"`
	// Description says what the action does; it describes a webhook's
	// tool.
	Description string `yaml:"description"`
	// Check, when set, is a plugin_id asked before the action's
	// confirmation with the same arguments: a failed check fails the step
	// with its result and the user is not asked (an order that cannot be
	// cancelled).
	Check string `yaml:"check"`
	// Webhook, when set, registers Plugin's tool as an HTTP webhook.
	Webhook *webhookSpec `yaml:"webhook"`
}

// webhookSpec configures a tool that is an HTTP endpoint of a real
// backend (see NewWebhook).
type webhookSpec struct {
	// Kind is read for a backend that only looks things up, write
	// (default) for one that changes something.
	Kind tool.Kind `yaml:"kind"`
	// URL receives a POST of the call as JSON.
	URL string `yaml:"url"`
	// Timeout bounds a call (default 5s).
	Timeout time.Duration `yaml:"timeout"`
	// Headers are sent with every call; $VAR and ${VAR} are expanded from
	// the environment.
	Headers map[string]string `yaml:"headers"`
}

// Forms (forms.yml) define slots and which intents need which.
type Forms struct {
	// Slots are the slot types, by name.
	Slots map[string]slotSpec `yaml:"slots"`
	// Forms are the intents' forms, by intent id. Every intent has one,
	// empty when it needs no slot.
	Forms map[string]formSpec `yaml:"forms"`
}

// slotSpec says how to read one slot from text.
type slotSpec struct {
	// Label names the slot in replies ("目的地").
	Label string `yaml:"label"`
	// Type is text, number, enum or bool.
	Type string `yaml:"type"`
	// Patterns are regular expressions over the normalized text (lower
	// case, half-width); a named group gives the slot its value.
	Patterns []string `yaml:"patterns"`
	// Values are an enum's values, each with the words that name it; for
	// a number, words that stand for a value ("一半" for 50).
	Values map[string][]string `yaml:"values"`
	// Min and Max bound a number.
	Min *float64 `yaml:"min"`
	Max *float64 `yaml:"max"`
	// Ignore lists values that mean nothing in particular ("音乐" for a
	// song); they leave the slot empty.
	Ignore []string `yaml:"ignore"`
	// Upper upper-cases the value (order ids).
	Upper bool `yaml:"upper"`
	// FreeText lets a whole reply fill the slot when the assistant has
	// just asked for it ("公司" after "去哪里?").
	FreeText bool `yaml:"free_text"`
	// Fresh slots are what each request says: a request of the same
	// intent does not carry them over ("打开车窗" after "把车窗打开一半"
	// opens fully).
	Fresh bool `yaml:"fresh"`
}

// formSpec is one intent's form.
type formSpec struct {
	// Required slots must be known before the action runs.
	Required []string `yaml:"required"`
	// Optional slots are read when given.
	Optional []string `yaml:"optional"`
	// Defaults fill optional slots that were not given.
	Defaults map[string]string `yaml:"defaults"`
	// Ask are the questions for missing required slots, by slot.
	Ask map[string]string `yaml:"ask"`
}

// Responses (responses.yml) are the reply templates. A template's {name}
// is replaced by the slot or result field name; {name_label} by its label
// from Labels; {label} by the intent's label.
type Responses struct {
	// Templates are the general replies, by key (see requiredTemplates).
	Templates map[string]string `yaml:"templates"`
	// Social are small-talk replies by dialog act or social kind
	// (greet, thank, bye, capability, open); the turn count picks one.
	Social map[string][]string `yaml:"social"`
	// Intents are the per-intent replies.
	Intents map[string]intentResponses `yaml:"intents"`
	// Errors are the replies to failed actions, by the reason the tool
	// gives in its data ("reason").
	Errors map[string]string `yaml:"errors"`
	// Labels name values: field → value → label.
	Labels map[string]map[string]string `yaml:"labels"`
}

// intentResponses are one intent's replies.
type intentResponses struct {
	// Done is the reply when the intent ran alone.
	Done string `yaml:"done"`
	// Summary and SummaryAlso are its part of a workflow summary: the
	// first part and a later one ("车窗已经打开了", "空调也调到 20 度了").
	Summary     string `yaml:"summary"`
	SummaryAlso string `yaml:"summary_also"`
	// Confirm asks before running it; Skipped says a condition skipped it.
	Confirm string `yaml:"confirm"`
	Skipped string `yaml:"skipped"`
	// With are variants by name: when a step's slots or result have the
	// named field, the variant's non-empty replies are used instead
	// ("opened to {opening}%" when the user said how far, "{refund} will
	// be refunded" when the order was paid).
	With map[string]intentResponses `yaml:"with"`
}

// Rules (rules.yml) are the turn rules: stop phrases, confirmation,
// social routing, rewrites and routing thresholds.
type Rules struct {
	// Stop phrases end the active task.
	Stop intent.Phrases `yaml:"stop"`
	// Confirmation says which steps need a yes first and how a reply
	// answers.
	Confirmation Confirmation `yaml:"confirmation"`
	// Social routes small talk away from tasks.
	Social intent.SocialRules `yaml:"social"`
	// Rewrite completes short follow-ups from the session.
	Rewrite []intent.RewriteRule `yaml:"rewrite"`
	// Routing holds fusion weights and thresholds;
	// zero fields take intent's defaults.
	Routing intent.FusionConfig `yaml:"routing"`
	// RemoteClassifier, when given, is a classification service asked on
	// every turn beside the local stages, such as a fine-tuned BERT served
	// elsewhere: url, top_k, timeout.
	RemoteClassifier *intent.RemoteClassifier `yaml:"remote_classifier"`
}

// Confirmation rules: which steps ask first. A reply to
// the question is read by intent.ReadConsent, as every agent's is.
type Confirmation struct {
	// Intents always ask first.
	Intents []string `yaml:"intents"`
	// RiskLevels: actions at these risks ask first.
	RiskLevels []string `yaml:"risk_levels"`
}

// dialogActs (dialog_acts.yml) name the dialog act of a turn.
type dialogActs struct {
	// Acts are tried in order; the first that matches wins.
	Acts []intent.ActRule `yaml:"acts"`
	// DefaultAct is the act when none matches.
	DefaultAct string `yaml:"default_act"`
}

// Workflows (workflows.yml) configure multi-step planning.
type Workflows struct {
	// Split says where an utterance splits into clauses and what makes it
	// conditional.
	Split intent.SplitConfig `yaml:"split"`
	// Templates are fixed workflows, tried before any other planner.
	Templates []templateSpec `yaml:"templates"`
	// Conditions turn a clause into a condition on an earlier step's
	// result ("如果没发货就取消": cancel only if not shipped).
	Conditions []conditionHint `yaml:"conditions"`
}

// templateSpec is a fixed workflow, matched when the clauses' intents
// start with Intents and every trigger keyword occurs.
type templateSpec struct {
	ID       string     `yaml:"id"`
	Kind     string     `yaml:"kind"`
	Intents  []string   `yaml:"intents"`
	Triggers []string   `yaml:"trigger_keywords"`
	Steps    []stepSpec `yaml:"steps"`
}

// stepSpec is one step of a template; steps are numbered from 1.
type stepSpec struct {
	Intent               string         `yaml:"intent"`
	DependsOn            []int          `yaml:"depends_on"`
	Condition            *conditionSpec `yaml:"condition"`
	RequiresConfirmation bool           `yaml:"requires_confirmation"`
}

// conditionSpec tests a field of an earlier step's result.
type conditionSpec struct {
	// Step is the number of the step whose result is tested.
	Step     int    `yaml:"step"`
	Field    string `yaml:"field"`
	Operator string `yaml:"operator"`
	Value    Values `yaml:"value"`
}

// conditionHint makes Target depend on an earlier Source step when one of
// Phrases occurs: "查订单A123,如果没发货就取消".
type conditionHint struct {
	Source               string   `yaml:"source"`
	Target               string   `yaml:"target"`
	Phrases              []string `yaml:"phrases"`
	Field                string   `yaml:"field"`
	Operator             string   `yaml:"operator"`
	Value                Values   `yaml:"value"`
	RequiresConfirmation bool     `yaml:"requires_confirmation"`
}

// Values is one value or a list of them.
type Values []string

// UnmarshalYAML reads a scalar or a sequence of scalars.
func (v *Values) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*v = Values{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*v = list
	return nil
}

// errConfig is wrapped by every configuration error.
var errConfig = errors.New("cabin: bad config")

// configError is a configuration error at a file and line.
type configError struct {
	File   string
	Line   int
	Reason string
}

// Error reads "domain.yml:12: intent x: unknown action y".
func (e *configError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return e.File + ": " + e.Reason
}

// Is makes errors.Is(err, ErrConfig) hold.
func (e *configError) Is(target error) bool { return target == errConfig }

// loadConfig reads the configuration of locale (LocaleChinese when
// empty). A file present in dir (when dir is not empty) replaces the
// embedded default of the same name. Every error it finds is reported,
// each with file, line and reason, wrapping ErrConfig.
func loadConfig(locale, dir string) (*Config, error) {
	if locale == "" {
		locale = localeChinese
	}
	if _, err := fs.Stat(defaults, "config/"+locale); err != nil {
		return nil, &configError{File: "config", Reason: fmt.Sprintf("no default configuration for locale %q (have %s, %s)", locale, localeChinese, localeEnglish)}
	}
	c := &Config{roots: map[string]*yaml.Node{}}
	targets := map[string]any{
		fileDomain: &c.Domain, fileActions: &c.Actions, fileForms: &c.Forms, fileResponses: &c.Responses,
		fileRules: &c.Rules, fileDialogActs: &c.DialogActs, fileWorkflows: &c.Workflows,
	}
	var errs []error
	for _, name := range configFiles {
		data, err := readConfigFile(locale, dir, name)
		if err != nil {
			errs = append(errs, &configError{File: name, Reason: err.Error()})
			continue
		}
		root, err := decodeStrict(data, targets[name])
		if err != nil {
			errs = append(errs, yamlError(name, err))
			continue
		}
		c.roots[name] = root
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// readConfigFile reads name from dir if it is there, else the embedded
// default of locale.
func readConfigFile(locale, dir, name string) ([]byte, error) {
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return defaults.ReadFile("config/" + locale + "/" + name)
}

// decodeStrict decodes data into v, refusing unknown fields, and returns
// the YAML tree for line numbers.
func decodeStrict(data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) { // an empty file is empty
		return nil, err
	}
	return &root, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML decoding error into ConfigErrors with lines.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var errs []error
		for _, msg := range te.Errors {
			errs = append(errs, lineError(file, msg))
		}
		return errors.Join(errs...)
	}
	return lineError(file, err.Error())
}

func lineError(file, msg string) *configError {
	e := &configError{File: file, Reason: msg}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Reason = trimYAMLPrefix(yamlLine.ReplaceAllString(msg, ""))
		// yaml.v3 numbers the lines of parser errors ("did not find
		// expected …") from 0, those of scanner and type errors from 1.
		if strings.HasPrefix(e.Reason, "did not find expected") {
			e.Line++
		}
	}
	return e
}

// trimYAMLPrefix drops "yaml: " and the ": " left where the line number was.
func trimYAMLPrefix(s string) string {
	for _, p := range []string{"yaml: ", ": "} {
		if len(s) >= len(p) && s[:len(p)] == p {
			s = s[len(p):]
		}
	}
	return s
}

// line returns the line of the node at path in file (map keys as strings,
// sequence indexes as ints), or of the deepest node found on the way.
func (c *Config) line(file string, path ...any) int {
	n := c.roots[file]
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next, line = n.Content[i+1], n.Content[i].Line
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
