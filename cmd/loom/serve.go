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

	"github.com/loomkit/loom/apps/cabin"
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
	if err := server.CheckAddr(*addr, len(keys) > 0); err != nil {
		return err
	}
	tp, stopTracing, err := tracingFromEnv(ctx)
	if err != nil {
		return err
	}
	defer stopTracing(context.WithoutCancel(ctx))
	reg := agents()
	srv, err := server.New(ctx, server.Options{
		TracerProvider: tp,
		Agents:         reg,
		Database:       os.Getenv("LOOM_DATABASE_URL"),
		Keys:           keys,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, nil)),
		UI:             ui.Handler(),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	// The cabin agent's own endpoints (seed 003): /api/v1/agent/chat, …
	cabin.Mount(srv)
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
