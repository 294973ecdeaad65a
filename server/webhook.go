package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loomkit/loom/graph"
)

// This file delivers webhooks: a run asked with "webhook": URL has its
// outcome POSTed there when it ends. The run's end writes the delivery
// (with its body) beside the run's record, and a worker sends it, so a
// slow or dead receiver never holds the run up; a delivery that fails is
// tried again with growing pauses, by whichever server ticks next (see
// crons_tick.go), up to webhookTries times. Each attempt is recorded and
// shown at GET /threads/{thread_id}/runs/{run_id}/webhook.
//
// Bodies are signed with the API key's webhook secret (GET
// /webhooks/secret): the header X-Loom-Signature is "sha256=" and the
// hex HMAC-SHA256 of the body under that secret.

// Webhook limits.
const (
	webhookTries   = 6                // attempts of a delivery at most
	webhookTimeout = 10 * time.Second // per attempt
	webhookLease   = 2 * time.Minute  // a claimed delivery's hold, after which another server may try it
	maxWebhookURL  = 2048
	maxWebhookBody = 256 << 10 // bytes of a run's values in a delivery; larger are left out
	// signatureHeader carries a webhook body's signature.
	signatureHeader = "X-Loom-Signature"
)

// webhookBackoff is the pause before the attempt after tries failed
// ones: 2s, 4s, 8s … up to 5 minutes.
var webhookBackoff = func(tries int) time.Duration {
	return min(2*time.Second<<max(tries-1, 0), 5*time.Minute)
}

// allowPrivateWebhooks says whether webhooks may go to loopback and
// private addresses, which they may not by default: a key could
// otherwise make the server call services on its own network.
func allowPrivateWebhooks() bool {
	v, _ := strconv.ParseBool(os.Getenv("LOOM_WEBHOOK_ALLOW_PRIVATE"))
	return v
}

// publicAddr reports whether a webhook may go to addr.
func publicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsValid() && addr.IsGlobalUnicast() && !addr.IsPrivate() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(addr) && // carrier-grade NAT
		!netip.MustParsePrefix("fc00::/7").Contains(addr)
}

// checkWebhook checks a run's webhook URL: http or https, a host, no
// credentials, and no loopback or private address unless
// LOOM_WEBHOOK_ALLOW_PRIVATE allows it (names are checked again, when
// they are resolved, at each delivery).
func checkWebhook(raw string) error {
	bad := func(why string) error {
		return errorf(http.StatusUnprocessableEntity, "invalid_webhook", "webhook: %s", why)
	}
	if len(raw) > maxWebhookURL {
		return bad(fmt.Sprintf("the URL is longer than %d bytes", maxWebhookURL))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("want an http:// or https:// URL")
	}
	if u.User != nil {
		return bad("the URL may not hold a user name or password; verify deliveries by their signature")
	}
	if allowPrivateWebhooks() {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return bad("loopback and private addresses are refused")
	}
	if a, err := netip.ParseAddr(host); err == nil && !publicAddr(a) {
		return bad("loopback and private addresses are refused")
	}
	return nil
}

// webhookClient sends deliveries: no redirects, no proxies from the
// environment, and (unless allowed) no connection to a loopback or
// private address, whatever a name resolves to.
var webhookClient = &http.Client{
	Timeout: webhookTimeout,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
	Transport: &http.Transport{
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			if allowPrivateWebhooks() {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !publicAddr(ap.Addr()) {
				return errors.New("webhook address is loopback or private")
			}
			return nil
		}}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: webhookTimeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
	},
}

// webhookAttempt is one try of a delivery.
type webhookAttempt struct {
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// webhookBody is what a delivery POSTs: the run as the API shows it,
// its values when it ended well (left out past maxWebhookBody), or its
// error.
type webhookBody struct {
	lgRun
	Values          json.RawMessage `json:"values,omitempty"`
	ValuesTruncated bool            `json:"values_truncated,omitempty"`
	Error           string          `json:"error,omitempty"`
}

// queueWebhook records the delivery of run r's end, which ended with
// end as status. It is called once the run's record is written, and only
// writes: the delivery is sent by deliverWebhooks.
func (s *Server) queueWebhook(ctx context.Context, r *run, end event, status string) {
	rec := r.record()
	rec.Status, rec.Updated = status, time.Now().UTC()
	body := webhookBody{lgRun: runJSON(rec), Error: end.Err}
	if end.Kind != graph.KindError && len(end.Data) > 0 {
		if len(end.Data) <= maxWebhookBody {
			body.Values = end.Data
		} else {
			body.ValuesTruncated = true
		}
	}
	b, err := json.Marshal(body)
	if err == nil {
		now := ms(time.Now())
		_, err = s.records.exec(ctx, `INSERT INTO loom_webhooks (run_id, thread, owner, url, state, body, tries, attempts, next_at, created, updated)
VALUES (?, ?, ?, ?, 'due', ?, 0, '[]', ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`, r.id, r.thread, r.owner, r.webhook, string(b), now, now, now)
	}
	if err != nil {
		s.log.Error("queue webhook", "run", r.id, "err", err)
		return
	}
	go s.deliverWebhooks(context.WithoutCancel(ctx), r.id)
}

// deliverWebhooks sends the deliveries that are due (only run's, when
// run is not ""), each claimed first so that one server sends it.
func (s *Server) deliverWebhooks(ctx context.Context, run string) error {
	now := time.Now()
	q := `SELECT run_id, next_at FROM loom_webhooks WHERE state = 'due' AND next_at <= ? ORDER BY next_at LIMIT 50`
	args := []any{ms(now)}
	if run != "" {
		q, args = `SELECT run_id, next_at FROM loom_webhooks WHERE state = 'due' AND next_at <= ? AND run_id = ?`, append(args, run)
	}
	rows, err := s.db.SQL().QueryContext(ctx, s.records.q(q), args...)
	if err != nil {
		return fmt.Errorf("read due webhooks: %w", err)
	}
	type due struct {
		id   string
		next int64
	}
	var all []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.next); err != nil {
			rows.Close()
			return fmt.Errorf("read due webhooks: %w", err)
		}
		all = append(all, d)
	}
	rows.Close()
	for _, d := range all {
		res, err := s.records.exec(ctx, `UPDATE loom_webhooks SET next_at = ? WHERE run_id = ? AND state = 'due' AND next_at = ?`,
			ms(now.Add(webhookLease)), d.id, d.next)
		if err != nil {
			return fmt.Errorf("claim webhook of run %s: %w", d.id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			s.sendWebhook(ctx, d.id)
		}
	}
	return nil
}

// sendWebhook tries the claimed delivery of run id once and records how
// it went.
func (s *Server) sendWebhook(ctx context.Context, id string) {
	var owner, target, body, attemptsJSON string
	var tries int
	err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT owner, url, body, tries, attempts FROM loom_webhooks WHERE run_id = ?`), id).
		Scan(&owner, &target, &body, &tries, &attemptsJSON)
	if err != nil {
		s.log.Error("read webhook", "run", id, "err", err)
		return
	}
	secret, err := s.webhookKey(ctx, owner)
	if err != nil {
		s.log.Error("webhook secret", "run", id, "err", err)
		return
	}
	began := time.Now()
	a := webhookAttempt{At: began.UTC()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(body)))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "loom-webhook")
		req.Header.Set("X-Loom-Delivery", id)
		req.Header.Set(signatureHeader, signWebhook(secret, []byte(body)))
		var resp *http.Response
		if resp, err = webhookClient.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			a.StatusCode = resp.StatusCode
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				err = fmt.Errorf("the receiver answered %s", resp.Status)
			}
		}
	}
	a.DurationMS = time.Since(began).Milliseconds()
	if err != nil {
		a.Error = webhookError(err)
	}
	var attempts []webhookAttempt
	_ = json.Unmarshal([]byte(attemptsJSON), &attempts)
	attempts = append(attempts, a)
	b, _ := json.Marshal(attempts)
	tries++
	state, next := "delivered", time.Now()
	switch {
	case err == nil:
	case tries >= webhookTries:
		state = "failed"
		s.log.Warn("webhook not delivered; giving up", "run", id, "tries", tries, "err", a.Error)
	default:
		state, next = "due", next.Add(webhookBackoff(tries))
	}
	if _, err := s.records.exec(ctx, `UPDATE loom_webhooks SET state = ?, tries = ?, attempts = ?, next_at = ?, updated = ? WHERE run_id = ?`,
		state, tries, string(b), ms(next), ms(time.Now()), id); err != nil {
		s.log.Error("record webhook attempt", "run", id, "err", err)
	}
}

// webhookError is what an attempt's record says of err: the reason,
// without the URL (which may carry a token in its query).
func webhookError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if isTimeout(err) {
		return "timed out"
	}
	return Redact(err.Error())
}

// signWebhook is the signature header's value for body.
func signWebhook(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// webhookKey returns owner's webhook secret, made on first use.
func (s *Server) webhookKey(ctx context.Context, owner string) (string, error) {
	var secret string
	err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT secret FROM loom_webhook_secrets WHERE owner = ?`), owner).Scan(&secret)
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read webhook secret: %w", err)
	}
	b := make([]byte, 32)
	rand.Read(b)
	if _, err := s.records.exec(ctx, `INSERT INTO loom_webhook_secrets (owner, secret, created) VALUES (?, ?, ?) ON CONFLICT (owner) DO NOTHING`,
		owner, "whsec_"+hex.EncodeToString(b), ms(time.Now())); err != nil {
		return "", fmt.Errorf("make webhook secret: %w", err)
	}
	if err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT secret FROM loom_webhook_secrets WHERE owner = ?`), owner).Scan(&secret); err != nil {
		return "", fmt.Errorf("read webhook secret: %w", err)
	}
	return secret, nil
}

// webhookSecret serves GET /webhooks/secret: the caller's key's secret
// that signs its webhooks, and the header that carries the signature.
func (s *Server) webhookSecret(w http.ResponseWriter, r *http.Request, owner string) error {
	secret, err := s.webhookKey(r.Context(), owner)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret, "header": signatureHeader,
		"signature": "sha256= and the hex HMAC-SHA256 of the request body under the secret"})
	return nil
}

// runWebhook serves GET /threads/{tid}/runs/{rid}/webhook: how the
// delivery of the run's webhook stands, with every attempt.
func (s *Server) runWebhook(w http.ResponseWriter, r *http.Request, owner string) error {
	_, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	var target, state, attempts string
	var tries int
	var next int64
	err = s.db.SQL().QueryRowContext(r.Context(), s.records.q(`SELECT url, state, tries, attempts, next_at FROM loom_webhooks WHERE run_id = ?`), rec.ID).
		Scan(&target, &state, &tries, &attempts, &next)
	if errors.Is(err, sql.ErrNoRows) {
		return errorf(http.StatusNotFound, "not_found", "run %s has no webhook delivery (none was asked, or the run has not ended)", rec.ID)
	}
	if err != nil {
		return fmt.Errorf("read webhook of run %s: %w", rec.ID, err)
	}
	out := map[string]any{"run_id": rec.ID, "url": target, "status": state, "tries": tries, "attempts": json.RawMessage(attempts)}
	if state == "due" {
		out["next_attempt_at"] = fromMS(next)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
