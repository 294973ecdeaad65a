package knowledge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/datasource"
)

// Errors for knowledge that is well formed but cannot be taken; the
// store's errors wrap them.
var (
	// ErrUnknownSource: the entry is about a data source the server does
	// not serve (see Store.SetSources).
	ErrUnknownSource = errors.New("unknown data source")
	// ErrUnsafeSQL: an example's SQL is not a single read-only query the
	// SQL guard lets through in its source's dialect.
	ErrUnsafeSQL = errors.New("example SQL refused")
)

// SetSources names the data sources entries may be about, each with the
// SQL dialect it speaks. Create, Update and Import then refuse an entry
// of another source (ErrUnknownSource) and an example whose SQL the SQL
// guard (datasource.Check) refuses in its source's dialect
// (ErrUnsafeSQL); Sources lists them beside those the caller has
// knowledge of. Without SetSources, any source is taken and example SQL
// is not checked. Starting knowledge (Seed) is not checked. Call it
// before the store is used.
func (s *Store) SetSources(dialects map[string]datasource.Dialect) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialects = make(map[string]datasource.Dialect, len(dialects))
	for name, d := range dialects {
		s.dialects[name] = d
	}
}

// configured returns the sources SetSources named, sorted, and whether
// it was called.
func (s *Store) configured() ([]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.dialects == nil {
		return nil, false
	}
	names := make([]string, 0, len(s.dialects))
	for name := range s.dialects {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, true
}

// admit says why e, a valid entry, cannot be stored for the configured
// sources, or nil.
func (s *Store) admit(e *Entry) error {
	s.mu.RLock()
	dialects := s.dialects
	s.mu.RUnlock()
	if dialects == nil {
		return nil
	}
	d, ok := dialects[e.Source]
	if !ok {
		names, _ := s.configured()
		known := "no data sources are configured"
		if len(names) > 0 {
			known = "the sources are " + strings.Join(names, ", ")
		}
		return fmt.Errorf("%w: there is no data source %q; %s", ErrUnknownSource, e.Source, known)
	}
	if e.Kind != KindExample || e.SQL == "" {
		return nil
	}
	if _, err := datasource.Check(d, e.SQL); err != nil {
		return fmt.Errorf("%w: the SQL of %s cannot be stored: %v", ErrUnsafeSQL, e.Label(), err)
	}
	return nil
}

// knownSources returns the configured sources and those in have, sorted
// and without repeats.
func (s *Store) knownSources(have []string) []string {
	names, _ := s.configured()
	out := append(names, have...)
	slices.Sort(out)
	return slices.Compact(out)
}
