package intent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// RemoteClassifier is a classification service over HTTP, the optional
// remote stage (WithRemote), such as a fine-tuned BERT served elsewhere. It can be read from
// YAML or JSON.
//
// Each Match POSTs {"text": …, "top_k": …, "labels": […]} to URL and reads
// {"candidates": [{"intent": …, "score": …}, …]}; a service that answers
// only its top label, as {"intent_id": …, "score": …} or {"intent": …,
// "score": …}, works too. Scores should lie in [0, 1]; labels not in
// Labels are dropped.
type RemoteClassifier struct {
	// URL is the service's endpoint.
	URL string `yaml:"url" json:"url"`
	// TopK is how many candidates to ask for. Default 5.
	TopK int `yaml:"top_k" json:"top_k"`
	// Timeout bounds one request ("300ms" in YAML). Default 2s.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Labels are the intents the service may answer, sent with every
	// request. Empty: any label is kept.
	Labels []string `yaml:"-" json:"-"`
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client `yaml:"-" json:"-"`
}

// Check reports whether the classifier is usable: an http or https URL
// and no negative setting.
func (rc *RemoteClassifier) Check() error {
	u, err := url.Parse(rc.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: remote classifier url %q: want an http or https URL", ErrConfig, rc.URL)
	}
	if rc.TopK < 0 || rc.Timeout < 0 {
		return fmt.Errorf("%w: remote classifier top_k %d, timeout %v: want 0 (the default) or more", ErrConfig, rc.TopK, rc.Timeout)
	}
	return nil
}

type remoteRequest struct {
	Text   string   `json:"text"`
	TopK   int      `json:"top_k"`
	Labels []string `json:"labels,omitempty"`
}

type remoteCandidate struct {
	Intent   string  `json:"intent"`
	IntentID string  `json:"intent_id"`
	Score    float64 `json:"score"`
}

type remoteResponse struct {
	Candidates []remoteCandidate `json:"candidates"`
	remoteCandidate
}

// maxRemoteBody bounds the answer read from the service.
const maxRemoteBody = 1 << 20

// Match implements Matcher.
func (rc *RemoteClassifier) Match(ctx context.Context, text string) ([]Candidate, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(rc.Timeout, 2*time.Second))
	defer cancel()
	body, err := json.Marshal(remoteRequest{Text: text, TopK: cmp.Or(rc.TopK, 5), Labels: rc.Labels})
	if err != nil {
		return nil, fmt.Errorf("remote classifier: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("remote classifier: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := rc.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote classifier %s: %w", rc.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteBody))
	if err != nil {
		return nil, fmt.Errorf("remote classifier %s: read the answer: %w", rc.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("remote classifier %s: HTTP %d: %.200s", rc.URL, resp.StatusCode, raw)
	}
	var r remoteResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("remote classifier %s: malformed answer: %w", rc.URL, err)
	}
	cands := r.Candidates
	if len(cands) == 0 {
		cands = []remoteCandidate{r.remoteCandidate}
	}
	var out []Candidate
	for _, c := range cands {
		id := cmp.Or(c.Intent, c.IntentID)
		if id == "" || (len(rc.Labels) > 0 && !slices.Contains(rc.Labels, id)) {
			continue
		}
		out = append(out, Candidate{Intent: id, Score: min(max(c.Score, 0), 1), Reason: "remote"})
	}
	return out, nil
}
