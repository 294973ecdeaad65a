package cabin

import "github.com/loomkit/loom/intent"

// catalog is the intent catalogue with each intent's action and replies.
type catalog struct {
	intents map[string]*intentInfo
	ids     []string // in domain.yml order
	oos     string
}

// intentInfo is one intent with what it needs at run time.
type intentInfo struct {
	intentSpec
	action  actionSpec
	replies intentResponses
}

func newCatalog(c *Config) *catalog {
	actions := map[string]actionSpec{}
	for _, a := range c.Actions.Actions {
		actions[a.ID] = a
	}
	cat := &catalog{intents: map[string]*intentInfo{}, oos: c.Domain.OutOfScope.ID}
	for _, in := range c.Domain.Intents {
		cat.intents[in.ID] = &intentInfo{
			intentSpec: in,
			action:     actions[in.Action],
			replies:    c.Responses.Intents[in.ID],
		}
		cat.ids = append(cat.ids, in.ID)
	}
	return cat
}

// known reports whether id is an intent of the catalogue (not the
// out-of-scope class).
func (c *catalog) known(id string) bool { return c.intents[id] != nil }

// label is the intent's label, or its id.
func (c *catalog) label(id string) string {
	if in := c.intents[id]; in != nil {
		return in.Label
	}
	return id
}

// engineConfig is the intent engine's configuration from the files.
func (c *Config) engineConfig() intent.Config {
	var intents []intent.Intent
	for _, in := range c.Domain.Intents {
		intents = append(intents, intent.Intent{ID: in.ID, Description: in.Label, Keywords: in.Keywords, Examples: in.Examples})
	}
	intents = append(intents, intent.Intent{ID: c.Domain.OutOfScope.ID, Examples: c.Domain.OutOfScope.Examples})
	return intent.Config{
		Intents:    intents,
		OutOfScope: c.Domain.OutOfScope.ID,
		Fusion:     c.Rules.Routing,
		Rules: intent.Rules{
			Acts:       c.DialogActs.Acts,
			DefaultAct: c.DialogActs.DefaultAct,
			Stop:       c.Rules.Stop,
			Social:     c.Rules.Social,
			Rewrite:    c.Rules.Rewrite,
		},
		Split: c.Workflows.Split,
	}
}
