// Package mcptool gives agents the tools of MCP servers: programs run over
// stdio or Streamable HTTP endpoints, listed in a configuration file (see
// Config). Each server tool becomes a tool.Tool with the server's JSON
// schema; a tool the server marks readOnlyHint is a read tool, any other
// a write tool, which waits for a person's confirmation like every write
// tool.
//
// A server program is treated as hostile: it runs without a shell, with
// only the environment the configuration declares, its messages and its
// stderr bounded. Every call has a timeout, results are cut at a size,
// and a server that dies fails the call in flight (a result for the
// model) and is started again on the next call.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/tool"
)

const (
	// maxTools bounds the tools taken from one server.
	maxTools = 128
	// maxDescription bounds a tool's description, in bytes.
	maxDescription = 2048
	// connectTimeout bounds starting a server and listing its tools.
	connectTimeout = 30 * time.Second
	// maxRestarts bounds restarts of one server within restartWindow.
	maxRestarts   = 5
	restartWindow = time.Minute
)

// Toolset is the tools of some MCP servers, connected. Close it when done.
type Toolset struct {
	conns []*conn
	tools []tool.Tool
}

// Open connects to each server and lists its tools. A server that cannot
// be started or listed fails Open, naming it; those opened are closed.
func Open(ctx context.Context, servers ...Server) (*Toolset, error) {
	ts := &Toolset{}
	for _, s := range servers {
		if err := s.check(); err != nil {
			ts.Close()
			return nil, fmt.Errorf("MCP server %s: %w", s.Name, err)
		}
		c := &conn{srv: s, log: slog.Default().With("mcp_server", s.Name)}
		ts.conns = append(ts.conns, c)
		tools, err := c.list(ctx)
		if err != nil {
			ts.Close()
			return nil, fmt.Errorf("MCP server %s: %w", s.Name, err)
		}
		ts.tools = append(ts.tools, tools...)
	}
	return ts, nil
}

// Tools returns the servers' tools.
func (ts *Toolset) Tools() []tool.Tool { return ts.tools }

// Close ends every server's session and stops server programs.
func (ts *Toolset) Close() error {
	var errs []error
	for _, c := range ts.conns {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// conn is the session with one server, started again after it died.
type conn struct {
	srv Server
	log *slog.Logger

	mu       sync.Mutex
	session  *mcp.ClientSession
	dead     bool
	closed   bool
	restarts []time.Time
	stderr   *tail
}

// connect starts a session; c.mu is held.
func (c *conn) connect(ctx context.Context) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "loom", Version: "1"}, nil)
	var t mcp.Transport
	if c.srv.Command != "" {
		cmd := exec.Command(c.srv.Command, c.srv.Args...)
		cmd.Env = []string{}
		for k, v := range c.srv.Env {
			cmd.Env = append(cmd.Env, k+"="+expand(v))
		}
		cmd.Dir = c.srv.Dir
		c.stderr = &tail{max: 4 << 10}
		cmd.Stderr = c.stderr
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		headers := http.Header{}
		for k, v := range c.srv.Headers {
			headers.Set(k, expand(v))
		}
		t = &mcp.StreamableClientTransport{
			Endpoint:             c.srv.URL,
			HTTPClient:           &http.Client{Transport: withHeaders{headers, http.DefaultTransport}},
			MaxRetries:           2,
			DisableStandaloneSSE: true,
		}
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	s, err := client.Connect(ctx, t, nil)
	if err != nil {
		if c.stderr != nil {
			c.log.Warn("MCP server did not start", "err", err, "stderr", c.stderr.String())
		}
		return fmt.Errorf("connect: %w", err)
	}
	c.session, c.dead = s, false
	go func() {
		s.Wait()
		c.mu.Lock()
		if c.session == s && !c.closed {
			c.dead = true
			attrs := []any{}
			if c.stderr != nil {
				attrs = append(attrs, "stderr", c.stderr.String())
			}
			c.log.Warn("MCP server stopped; it is started again on the next call", attrs...)
		}
		c.mu.Unlock()
	}()
	return nil
}

// live returns a working session, starting the server again if it died.
func (c *conn) live(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("MCP server %s: closed", c.srv.Name)
	}
	if c.session != nil && !c.dead {
		return c.session, nil
	}
	now := time.Now()
	recent := c.restarts[:0]
	for _, t := range c.restarts {
		if now.Sub(t) < restartWindow {
			recent = append(recent, t)
		}
	}
	c.restarts = recent
	if len(c.restarts) >= maxRestarts {
		return nil, fmt.Errorf("MCP server %s is down: it stopped %d times within %s", c.srv.Name, maxRestarts, restartWindow)
	}
	c.restarts = append(c.restarts, now)
	if c.session != nil {
		c.session.Close()
	}
	if err := c.connect(ctx); err != nil {
		return nil, fmt.Errorf("MCP server %s is down: %w", c.srv.Name, err)
	}
	return c.session, nil
}

func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.session == nil {
		return nil
	}
	err := c.session.Close()
	c.session = nil
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) && c.srv.Command == "" {
		return fmt.Errorf("MCP server %s: close: %w", c.srv.Name, err)
	}
	return nil
}

var badName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// list connects and makes the server's tools.
func (c *conn) list(ctx context.Context) ([]tool.Tool, error) {
	c.mu.Lock()
	err := c.connect(ctx)
	s := c.session
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var out []tool.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if len(out) == maxTools {
			c.log.Warn("MCP server offers too many tools; the rest are left out", "max", maxTools)
			break
		}
		lt, err := c.tool(t)
		if err != nil {
			c.log.Warn("MCP tool left out", "tool", t.Name, "err", err)
			continue
		}
		out = append(out, lt)
	}
	return out, nil
}

// tool makes a Loom tool of server tool t.
func (c *conn) tool(t *mcp.Tool) (tool.Tool, error) {
	name := badName.ReplaceAllString(c.srv.Prefix+t.Name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		schema = []byte(`{"type":"object"}`)
	}
	kind := tool.Write
	if t.Annotations != nil && t.Annotations.ReadOnlyHint {
		kind = tool.Read
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	desc = clip(desc, maxDescription)
	remote := t.Name
	return tool.NewRaw(name, desc, kind, schema, func(ctx context.Context, args json.RawMessage) (any, error) {
		return c.call(ctx, remote, args)
	})
}

// call calls tool name on the server, within the server's timeout.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	limit := c.srv.timeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s, err := c.live(ctx)
	if err != nil {
		return "", err
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	switch {
	case err == nil:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("MCP server %s did not answer within %s", c.srv.Name, limit)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, mcp.ErrConnectionClosed) || c.isDead(s):
		return "", fmt.Errorf("MCP server %s stopped during the call; it is started again on the next call", c.srv.Name)
	case errors.As(err, new(*jsonrpc.Error)):
		// The server answered with an error: the session is sound.
		return "", fmt.Errorf("MCP server %s: %w", c.srv.Name, err)
	default:
		// The session may be broken (an endpoint that went away and came
		// back knows it no more): the next call starts a new one.
		c.drop(s)
		return "", fmt.Errorf("MCP server %s: %w", c.srv.Name, err)
	}
	text := clip(render(res), c.srv.maxResult())
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// drop marks session s dead, if it is still the current one.
func (c *conn) drop(s *mcp.ClientSession) {
	c.mu.Lock()
	if c.session == s {
		c.dead = true
	}
	c.mu.Unlock()
}

// isDead reports whether session s has ended, waiting a moment for its
// end to be noticed.
func (c *conn) isDead(s *mcp.ClientSession) bool {
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
		c.drop(s)
		return true
	case <-time.After(500 * time.Millisecond):
		return false
	}
}

// render turns a result's content into text for the model.
func render(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, x.Text)
		case *mcp.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				parts = append(parts, x.Resource.Text)
			} else if x.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", x.Resource.URI))
			}
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", x.URI))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// clip cuts s to at most n bytes on a rune boundary, saying how much was
// left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes cut)", len(s)-cut)
}

// withHeaders adds the configured headers to each request.
type withHeaders struct {
	h    http.Header
	next http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.h {
		r.Header[k] = v
	}
	return w.next.RoundTrip(r)
}

// tail keeps the last max bytes written to it: a server's stderr, for
// the logs.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
