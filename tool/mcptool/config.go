package mcptool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxConfig bounds a configuration file.
const maxConfig = 1 << 20

// Config lists the MCP servers whose tools agents get.
type Config struct {
	Servers []Server `json:"servers" yaml:"servers"`
}

// Server is one MCP server: a program run over stdio (Command) or a
// Streamable HTTP endpoint (URL).
type Server struct {
	// Name names the server in logs and errors (letters, digits, '_', '-').
	Name string `json:"name" yaml:"name"`
	// Agents are the agents that get the server's tools; empty means all.
	Agents []string `json:"agents,omitempty" yaml:"agents,omitempty"`

	// Command and Args run the server as a program, without a shell.
	Command string   `json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string `json:"args,omitempty" yaml:"args,omitempty"`
	// Env is the program's whole environment: nothing of Loom's is passed
	// on unless named here. $NAME or ${NAME} in a value is replaced by
	// Loom's environment variable.
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// Dir is the program's working directory (default Loom's).
	Dir string `json:"dir,omitempty" yaml:"dir,omitempty"`

	// URL is a Streamable HTTP endpoint, and Headers are sent with every
	// request to it ($NAME or ${NAME} in a value is replaced by Loom's
	// environment variable, so that tokens stay out of the file).
	URL     string            `json:"url,omitempty" yaml:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`

	// Prefix is put before each tool's name, to keep the names of two
	// servers apart.
	Prefix string `json:"prefix,omitempty" yaml:"prefix,omitempty"`
	// Timeout bounds one tool call, "30s" by default.
	Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// MaxResult bounds a call's result in bytes (default 32 KiB); the
	// rest is cut with a note.
	MaxResult int `json:"max_result,omitempty" yaml:"max_result,omitempty"`
}

var serverName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Load reads a configuration file, YAML or JSON.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("read MCP servers file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return Config{}, fmt.Errorf("read MCP servers file: %w", err)
	}
	if len(data) > maxConfig {
		return Config{}, fmt.Errorf("MCP servers file %s: larger than %d bytes", path, maxConfig)
	}
	return Parse(data)
}

// Parse reads a configuration, YAML or JSON, and checks it.
func Parse(data []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("MCP servers: %w", err)
	}
	seen := map[string]bool{}
	for i := range c.Servers {
		s := &c.Servers[i]
		if err := s.check(); err != nil {
			return Config{}, fmt.Errorf("MCP server %d (%s): %w", i+1, s.Name, err)
		}
		if seen[s.Name] {
			return Config{}, fmt.Errorf("MCP server %s: named twice", s.Name)
		}
		seen[s.Name] = true
	}
	return c, nil
}

// For returns the servers whose tools agent gets.
func (c Config) For(agent string) []Server {
	var out []Server
	for _, s := range c.Servers {
		if len(s.Agents) == 0 || slices.Contains(s.Agents, agent) {
			out = append(out, s)
		}
	}
	return out
}

func (s *Server) check() error {
	if !serverName.MatchString(s.Name) {
		return errors.New("name must be 1 to 64 letters, digits, '_' or '-'")
	}
	switch {
	case s.Command == "" && s.URL == "":
		return errors.New("give command (a program run over stdio) or url (Streamable HTTP)")
	case s.Command != "" && s.URL != "":
		return errors.New("give command or url, not both")
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q: want an http or https URL", s.URL)
		}
		if u.User != nil {
			return errors.New("url: put credentials in headers, not in the URL")
		}
	case len(s.Headers) > 0:
		return errors.New("headers go with url, not command")
	}
	if s.Command != "" && strings.ContainsAny(s.Command, "\n\x00") {
		return errors.New("command: one program path or name, without a shell")
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("timeout %q: want a duration such as 30s", s.Timeout)
		}
	}
	if s.MaxResult < 0 {
		return errors.New("max_result must not be negative")
	}
	if s.Prefix != "" && !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`).MatchString(s.Prefix) {
		return errors.New("prefix must be 1 to 32 letters, digits, '_' or '-'")
	}
	return nil
}

func (s Server) timeout() time.Duration {
	if d, err := time.ParseDuration(s.Timeout); err == nil && d > 0 {
		return d
	}
	return 30 * time.Second
}

func (s Server) maxResult() int {
	if s.MaxResult > 0 {
		return s.MaxResult
	}
	return 32 << 10
}

// expand replaces $NAME and ${NAME} in v with Loom's environment
// variables.
func expand(v string) string { return os.ExpandEnv(v) }
