package sqlagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loomkit/loom/datasource"
)

// SourceConfig is one data source of the agent, as the sources file
// lists it.
type SourceConfig struct {
	// Name is how the model and the user name the source.
	Name string `json:"name" yaml:"name"`
	// URL is what datasource.Open takes: a SQLite path, postgres://…,
	// mysql://…. It is never shown.
	URL string `json:"url" yaml:"url"`
	// Description says what the data are about; the model reads it.
	Description string `json:"description,omitempty" yaml:"description"`
}

// ReadSources reads a sources file: YAML or JSON (JSON is YAML), either a
// list of sources or an object with a "sources" list.
func ReadSources(path string) ([]SourceConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sqlagent sources: %w", err)
	}
	var list []SourceConfig
	if err := yaml.Unmarshal(b, &list); err != nil {
		var doc struct {
			Sources []SourceConfig `yaml:"sources"`
		}
		if err2 := yaml.Unmarshal(b, &doc); err2 != nil {
			return nil, fmt.Errorf("sqlagent sources %s: %w", path, err)
		}
		list = doc.Sources
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("sqlagent sources %s: no sources", path)
	}
	seen := map[string]bool{}
	for i, s := range list {
		switch {
		case !sourceName.MatchString(s.Name):
			return nil, fmt.Errorf("sqlagent sources %s: source %d: name %q must be letters, digits, '_' or '-'", path, i+1, s.Name)
		case seen[s.Name]:
			return nil, fmt.Errorf("sqlagent sources %s: source %q twice", path, s.Name)
		case strings.TrimSpace(s.URL) == "":
			return nil, fmt.Errorf("sqlagent sources %s: source %q has no url", path, s.Name)
		}
		seen[s.Name] = true
	}
	return list, nil
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Sources are the agent's open data sources, by name, in order.
type Sources struct {
	list []*source
}

type source struct {
	SourceConfig
	*datasource.Source
}

// OpenSources opens every source of cfgs with the limits. A source that
// cannot be opened fails the whole: the agent should not start with a
// source it cannot reach silently missing.
func OpenSources(ctx context.Context, cfgs []SourceConfig, limits datasource.Limits) (*Sources, error) {
	out := &Sources{}
	for _, c := range cfgs {
		s, err := datasource.Open(ctx, c.URL, limits)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("sqlagent: source %s: %w", c.Name, err)
		}
		out.list = append(out.list, &source{c, s})
	}
	if len(out.list) == 0 {
		return nil, errors.New("sqlagent: no data sources")
	}
	return out, nil
}

// Close closes every source.
func (ss *Sources) Close() error {
	var errs []error
	for _, s := range ss.list {
		errs = append(errs, s.Source.Close())
	}
	return errors.Join(errs...)
}

// Names returns the sources' names, in order.
func (ss *Sources) Names() []string {
	out := make([]string, len(ss.list))
	for i, s := range ss.list {
		out[i] = s.Name
	}
	return out
}

// get returns the source called name, or the first for "".
func (ss *Sources) get(name string) (*source, error) {
	if name == "" {
		return ss.list[0], nil
	}
	for _, s := range ss.list {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no data source %q (the sources are: %s)", name, strings.Join(ss.Names(), ", "))
}

// describe lists the sources for the system prompt.
func (ss *Sources) describe() string {
	var b strings.Builder
	for _, s := range ss.list {
		fmt.Fprintf(&b, "- %s (%s)", s.Name, s.Dialect())
		if s.Description != "" {
			b.WriteString(": " + s.Description)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
