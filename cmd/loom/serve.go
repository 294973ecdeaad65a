package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/loomkit/loom/internal/leash"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/ui"
)

// serve runs `loom serve`: every registered agent over HTTP until ctx is
// done (SIGINT or SIGTERM), then a graceful shutdown.
func serve(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (HOST:PORT)")
	keysFile := fs.String("keys", os.Getenv("LOOM_API_KEYS_FILE"), "file of API keys, one a line (default $LOOM_API_KEYS_FILE)")
	cfg := configFromEnv()
	fs.StringVar(&cfg.sqlSources, "sqlagent-sources", cfg.sqlSources, "YAML or JSON file of the SQL agent's and the data analyst's data sources ($LOOM_SQLAGENT_SOURCES; without one, a demo shop)")
	fs.IntVar(&cfg.reportMaxRetry, "report-max-retry", cfg.reportMaxRetry, "corrections the report designer may make of a template that fails validation, one that changes nothing counting twice; 0: 5 ($LOOM_REPORT_MAX_RETRY)")
	fs.Float64Var(&cfg.reportSSIM, "report-ssim", cfg.reportSSIM, "similarity, from 0 to 1, that a template drawn from a picture must reach against it, measured over the form; 0: 0.35 ($LOOM_REPORT_SSIM)")
	mcpFile := fs.String("mcp-servers", os.Getenv("LOOM_MCP_SERVERS"), "YAML or JSON file of MCP servers whose tools agents get; agents that take them: "+strings.Join(mcpAgents, ", ")+" ($LOOM_MCP_SERVERS)")
	hosts := fs.String("allowed-hosts", "", "Host names served besides localhost, 127.0.0.1 and [::1], comma separated (*.example.com: the names under it; *: any); with keys, every Host is served unless some are listed ($LOOM_ALLOWED_HOSTS)")
	q := server.Quotas{}.WithDefaults()
	fs.IntVar(&q.ThreadsPerKey, "max-threads", q.ThreadsPerKey, "threads one API key may hold; -1: no limit ($LOOM_MAX_THREADS)")
	fs.IntVar(&q.RunningPerKey, "max-running", q.RunningPerKey, "threads of one API key that may run at once; -1: no limit ($LOOM_MAX_RUNNING)")
	fs.IntVar(&q.QueuedPerThread, "max-queued-per-thread", q.QueuedPerThread, "runs that may wait behind a thread's running run; -1: no limit ($LOOM_MAX_QUEUED_PER_THREAD)")
	fs.IntVar(&q.QueuedPerKey, "max-queued", q.QueuedPerKey, "runs of one API key that may wait, over its threads; -1: no limit ($LOOM_MAX_QUEUED)")
	fs.Float64Var(&q.RatePerKey, "rate", q.RatePerKey, "requests a second one API key may make on average; -1: no limit ($LOOM_RATE)")
	fs.IntVar(&q.Burst, "burst", q.Burst, "requests one API key may make at once after a quiet spell ($LOOM_BURST)")
	fs.BoolVar(&q.Keyless, "quota-keyless", false, "apply the counts and the rate to use without API keys too ($LOOM_QUOTA_KEYLESS)")
	fs.IntVar(&q.MaxInput, "max-input", q.MaxInput, "bytes of JSON in a run's input or resume value; -1: no limit ($LOOM_MAX_INPUT)")
	fs.IntVar(&q.MaxMetadata, "max-metadata", q.MaxMetadata, "bytes of JSON in a thread's or run's metadata; -1: no limit ($LOOM_MAX_METADATA)")
	var jwtc server.JWT
	fs.StringVar(&jwtc.Issuer, "jwt-issuer", "", "issuer (iss) of the bearer tokens (JWT) accepted besides API keys ($LOOM_JWT_ISSUER)")
	fs.StringVar(&jwtc.Audience, "jwt-audience", "", "audience (aud) a bearer token must name: this server's id at the issuer ($LOOM_JWT_AUDIENCE)")
	fs.StringVar(&jwtc.JWKSURL, "jwt-jwks-url", "", "https URL of the issuer's signing keys (JWKS) ($LOOM_JWT_JWKS_URL)")
	fs.StringVar(&jwtc.JWKSFile, "jwt-jwks-file", "", "file of the issuer's signing keys (JWKS), instead of a URL ($LOOM_JWT_JWKS_FILE)")
	var keep server.Retention
	fs.IntVar(&keep.KeepCheckpoints, "keep-checkpoints", 0, "checkpoints kept of each thread's history, the newest; older ones are deleted every minute; 0: all ($LOOM_KEEP_CHECKPOINTS)")
	// The environment sets what the command line does not.
	for name, env := range map[string]string{"allowed-hosts": "LOOM_ALLOWED_HOSTS", "max-threads": "LOOM_MAX_THREADS", "max-running": "LOOM_MAX_RUNNING",
		"max-queued-per-thread": "LOOM_MAX_QUEUED_PER_THREAD", "max-queued": "LOOM_MAX_QUEUED", "rate": "LOOM_RATE", "burst": "LOOM_BURST",
		"quota-keyless": "LOOM_QUOTA_KEYLESS", "max-input": "LOOM_MAX_INPUT", "max-metadata": "LOOM_MAX_METADATA",
		"keep-checkpoints": "LOOM_KEEP_CHECKPOINTS", "jwt-issuer": "LOOM_JWT_ISSUER", "jwt-audience": "LOOM_JWT_AUDIENCE",
		"jwt-jwks-url": "LOOM_JWT_JWKS_URL", "jwt-jwks-file": "LOOM_JWT_JWKS_FILE"} {
		if v := os.Getenv(env); v != "" {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("serve: $%s: %w", env, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	keys, err := apiKeys(*keysFile, os.Getenv("LOOM_API_KEYS"))
	if err != nil {
		return err
	}
	ring, err := seal.FromEnv()
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := server.CheckAddr(*addr, len(keys) > 0 || jwtc.Issuer != ""); err != nil {
		return err
	}
	tp, stopTracing, err := tracingFromEnv(ctx)
	if err != nil {
		return err
	}
	defer stopTracing(context.WithoutCancel(ctx))
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var codec seal.Codec // nil: stored in the clear
	if ring != nil {
		codec = ring
		logger.Info("checkpoints and store items are sealed at rest", "sealing_key", ring.SealingKey())
	}
	// Temporary folders of a loom that was killed (OCR pages, schemas,
	// query results) go before anything new is written.
	if n, err := leash.Sweep(); err != nil {
		logger.Warn("could not remove the temporary folders of a stopped process", "err", err)
	} else if n > 0 {
		logger.Info("removed the temporary folders of a stopped process", "folders", n)
	}
	if *mcpFile != "" {
		ts, err := openMCP(ctx, *mcpFile, &cfg)
		if err != nil {
			return err
		}
		defer ts.Close()
	}
	reg := agentsFor(cfg)
	// LOOM_EMBED_MODEL ranks the long-term store's searches by
	// embeddings; without it they rank by words (BM25).
	embedder, err := openai.NewEmbedderFromEnv()
	if err != nil {
		logger.Warn("no embeddings: store searches rank by words alone", "err", err)
	}
	srv, err := server.New(ctx, server.Options{
		TracerProvider: tp,
		Agents:         reg,
		Database:       os.Getenv("LOOM_DATABASE_URL"),
		Keys:           keys,
		JWT:            jwtc,
		Logger:         logger,
		UI:             ui.Handler(),
		AllowedHosts:   strings.FieldsFunc(*hosts, func(r rune) bool { return r == ',' || r == ' ' }),
		Quotas:         q,
		Retention:      keep,
		Embedder:       embedder,
		Codec:          codec,
		Models:         modelNames(),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(out, "Loom is serving http://%s/ — agents: %s\n", ln.Addr(), strings.Join(reg.Names(), ", "))
	return srv.Serve(ctx, ln)
}

// apiKeys reads the keys from file (one a line; blank lines and lines
// starting with # are skipped) and from list (comma separated).
func apiKeys(file, list string) ([]string, error) {
	var keys []string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read API keys: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				keys = append(keys, l)
			}
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("read API keys: %s has no keys", file)
		}
	}
	for _, k := range strings.Split(list, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
