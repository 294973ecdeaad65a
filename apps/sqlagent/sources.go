package sqlagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/store"
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

// Sources are the agent's data sources, by name, in order.
type Sources struct {
	list []*source
	log  *slog.Logger
}

type source struct {
	SourceConfig
	*datasource.Source
}

// OpenSources dials every source of cfgs with the limits (see
// datasource.Dial): a source whose database is down does not fail the
// whole, nor the server; it is connected on first use and retried after
// a backoff, and while it is down a question on it is answered "source X
// is unavailable: …" (see Ready). Only a URL that can never work (an
// unknown scheme, say) is an error.
func OpenSources(ctx context.Context, cfgs []SourceConfig, limits datasource.Limits) (*Sources, error) {
	return openSources(ctx, cfgs, limits, slog.Default())
}

// openSources is OpenSources logging to log.
func openSources(ctx context.Context, cfgs []SourceConfig, limits datasource.Limits, log *slog.Logger) (*Sources, error) {
	out := &Sources{log: log}
	for _, c := range cfgs {
		s, err := datasource.Dial(c.URL, limits)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("sqlagent: source %s: %w", c.Name, err)
		}
		out.list = append(out.list, &source{c, s})
	}
	if len(out.list) == 0 {
		return nil, errors.New("sqlagent: no data sources")
	}
	for _, s := range out.list {
		// A first attempt now, so that the log says at start which
		// sources are down; the server does not wait for it.
		go func() {
			if err := s.Ping(context.WithoutCancel(ctx)); err != nil {
				out.logDown(s.Name, err)
			}
		}()
	}
	return out, nil
}

// Ready says whether every source answers now: nil, or one line per
// source that does not ("source sales is unavailable: connection
// refused"), without hosts or credentials. It is the agent's
// server.Agent.Ready; a source that failed lately is not tried again
// before its backoff ends.
func (ss *Sources) Ready(ctx context.Context) error {
	errs := make([]error, len(ss.list))
	var wg sync.WaitGroup
	for i, s := range ss.list {
		wg.Go(func() {
			err := s.Ping(ctx)
			switch {
			case err == nil:
			case errors.Is(err, datasource.ErrUnavailable):
				// The server logs what is down; the cause was logged
				// when the source failed a question or at start.
				errs[i] = SourceError(s.Name, err)
			default: // the check's own deadline
				errs[i] = &unavailableError{fmt.Sprintf("source %s is unavailable: it did not answer in time", s.Name)}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SourceError is how an agent says a source failed: a source that cannot
// be reached is "source NAME is unavailable: REASON", matching
// datasource.ErrUnavailable, without the cause (which may name the host:
// log it apart); other errors are returned as they are.
func SourceError(name string, err error) error {
	var u *datasource.UnavailableError
	if errors.As(err, &u) {
		return &unavailableError{fmt.Sprintf("source %s is unavailable: %s", name, u.Reason)}
	}
	return err
}

// unavailable is SourceError, logging the cause of a source that cannot
// be reached.
func (ss *Sources) unavailable(name string, err error) error {
	var u *datasource.UnavailableError
	if errors.As(err, &u) {
		ss.log.Warn("data source unavailable", "source", name, "reason", u.Reason, "err", u.Cause)
	}
	return SourceError(name, err)
}

// unavailableError is SourceError's: its text, matching
// datasource.ErrUnavailable, without the cause (which may name the host).
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == datasource.ErrUnavailable }

// logDown logs a source found down at start.
func (ss *Sources) logDown(name string, err error) {
	var u *datasource.UnavailableError
	if errors.As(err, &u) {
		ss.log.Warn("data source unavailable at start; it is retried when used", "source", name, "reason", u.Reason, "err", u.Cause)
	}
}

// RefuseOwn returns an error when a source of cfgs is the server's own
// database db (the same SQLite file, or the same server and database):
// through it any API key would read every key's threads. Loom's command
// calls it before serving; it opens nothing.
func RefuseOwn(db *store.DB, cfgs []SourceConfig) error {
	own, ok := ownIdentity(db)
	if !ok {
		return nil
	}
	for _, c := range cfgs {
		d, id, err := datasource.Identity(c.URL)
		if err != nil {
			continue // Dial says what is wrong with it
		}
		same := string(d)+" "+id == own.id
		if !same && d == datasource.SQLite && own.file != "" {
			same = sameFile(own.file, id)
		}
		if same {
			return fmt.Errorf("data source %s is Loom's own database: through it any API key could read every key's threads; give the agents another database", c.Name)
		}
	}
	return nil
}

// identity is what names a database for RefuseOwn.
type identity struct {
	id   string // dialect and datasource.Identity
	file string // SQLite: the file
}

// ownIdentity names the server's database db.
func ownIdentity(db *store.DB) (identity, bool) {
	if db == nil {
		return identity{}, false
	}
	_, where, _ := strings.Cut(db.String(), " ")
	switch db.Dialect() {
	case store.SQLite:
		return identity{id: string(datasource.SQLite) + " " + datasource.FileIdentity(where), file: where}, true
	case store.Postgres:
		// HOST:PORT/DATABASE, as datasource.Identity writes it.
		_, id, err := datasource.Identity("postgres://" + where)
		if err != nil {
			return identity{}, false
		}
		return identity{id: string(datasource.Postgres) + " " + id}, true
	}
	return identity{}, false
}

// sameFile reports whether the files a and b are one (a hard link, say).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
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
