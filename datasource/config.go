package datasource

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is one data source as a sources file lists it.
type Config struct {
	// Name is how the model and the user name the source.
	Name string `json:"name" yaml:"name"`
	// URL is what Open takes: a SQLite path, postgres://…, mysql://….
	// It is never shown.
	URL string `json:"url" yaml:"url"`
	// Description says what the data are about; the model reads it.
	Description string `json:"description,omitempty" yaml:"description"`
}

// ReadConfigs reads a sources file: YAML or JSON (JSON is YAML), either a
// list of sources or an object with a "sources" list. Names are letters,
// digits, '_' or '-', each once; every source has a URL.
func ReadConfigs(path string) ([]Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data sources: %w", err)
	}
	var list []Config
	if err := yaml.Unmarshal(b, &list); err != nil {
		var doc struct {
			Sources []Config `yaml:"sources"`
		}
		if err2 := yaml.Unmarshal(b, &doc); err2 != nil {
			return nil, fmt.Errorf("data sources %s: %w", path, err)
		}
		list = doc.Sources
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("data sources %s: no sources", path)
	}
	seen := map[string]bool{}
	for i, s := range list {
		switch {
		case !sourceName.MatchString(s.Name):
			return nil, fmt.Errorf("data sources %s: source %d: name %q must be letters, digits, '_' or '-'", path, i+1, s.Name)
		case seen[s.Name]:
			return nil, fmt.Errorf("data sources %s: source %q twice", path, s.Name)
		case strings.TrimSpace(s.URL) == "":
			return nil, fmt.Errorf("data sources %s: source %q has no url", path, s.Name)
		}
		seen[s.Name] = true
	}
	return list, nil
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// DefaultLimits are the bounds of each statement an agent runs: 30 s,
// 200 rows, 1 MiB. Each call returns a new value.
func DefaultLimits() Limits {
	return Limits{Timeout: 30 * time.Second, MaxRows: 200, MaxBytes: 1 << 20}
}

// Unavailable is how an agent says source name failed: a source that
// cannot be reached is "source NAME is unavailable: REASON", matching
// ErrUnavailable, without the cause (which may name the host: log it
// apart); other errors are returned as they are.
func Unavailable(name string, err error) error {
	var u *UnavailableError
	if errors.As(err, &u) {
		return &sourceDown{fmt.Sprintf("source %s is unavailable: %s", name, u.Reason)}
	}
	return err
}

// NotAnswering is how an agent says source name did not answer a check
// in time; it matches ErrUnavailable.
func NotAnswering(name string) error {
	return &sourceDown{fmt.Sprintf("source %s is unavailable: it did not answer in time", name)}
}

// sourceDown is Unavailable's error: its text, matching ErrUnavailable,
// without the cause.
type sourceDown struct{ msg string }

func (e *sourceDown) Error() string        { return e.msg }
func (e *sourceDown) Is(target error) bool { return target == ErrUnavailable }
