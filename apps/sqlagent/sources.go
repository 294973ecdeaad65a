package sqlagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/loomkit/loom/apps/internal/sources"
	"github.com/loomkit/loom/datasource"
)

// Sources are the agent's data sources, by name, in order.
type Sources struct {
	list []*source
	log  *slog.Logger
}

type source struct {
	datasource.Config
	*datasource.Source
}

// OpenSources dials every source of cfgs with the limits (see
// datasource.Dial): a source whose database is down does not fail the
// whole, nor the server; it is connected on first use and retried after
// a backoff, and while it is down a question on it is answered "source X
// is unavailable: …" (see Ready). Only a URL that can never work (an
// unknown scheme, say) is an error.
func OpenSources(ctx context.Context, cfgs []datasource.Config, limits datasource.Limits) (*Sources, error) {
	return openSources(ctx, cfgs, limits, slog.Default())
}

// openSources is OpenSources logging to log.
func openSources(ctx context.Context, cfgs []datasource.Config, limits datasource.Limits, log *slog.Logger) (*Sources, error) {
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
//
// The server logs what is down; the cause was logged when the source
// failed a question or at start.
func (ss *Sources) Ready(ctx context.Context) error {
	return sources.Ready(ctx, ss.list, func(s *source) (string, *datasource.Source) { return s.Name, s.Source })
}

// unavailable is datasource.Unavailable, logging the cause of a source that cannot
// be reached.
func (ss *Sources) unavailable(name string, err error) error {
	var u *datasource.UnavailableError
	if errors.As(err, &u) {
		ss.log.Warn("data source unavailable", "source", name, "reason", u.Reason, "err", u.Cause)
	}
	return datasource.Unavailable(name, err)
}

// logDown logs a source found down at start.
func (ss *Sources) logDown(name string, err error) {
	var u *datasource.UnavailableError
	if errors.As(err, &u) {
		ss.log.Warn("data source unavailable at start; it is retried when used", "source", name, "reason", u.Reason, "err", u.Cause)
	}
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
