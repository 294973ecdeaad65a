package server_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// issuer is a test identity provider: an EC key and an Ed25519 key it
// signs with, published as a JWKS by an httptest server.
type issuer struct {
	url     string // the JWKS URL
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	fetches atomic.Int32
}

const testIssuer, testAudience = "https://id.example.com/", "loom-test"

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{ec: ec, ed: ed}
	jwks := iss.jwks(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(hs.Close)
	iss.url = hs.URL + "/.well-known/jwks.json"
	return iss
}

// jwks is the issuer's public keys as a JWKS.
func (iss *issuer) jwks(t *testing.T) []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	pt, err := iss.ec.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "EC", "kid": "ec1", "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])},
		{"kty": "OKP", "kid": "ed1", "crv": "Ed25519", "x": b64(iss.ed.Public().(ed25519.PublicKey))},
		{"kty": "oct", "kid": "secret", "k": b64([]byte("never a signing key here"))},
	}})
	return b
}

// token signs claims (over defaults that pass) with method and key,
// naming kid.
func token(t *testing.T, method jwt.SigningMethod, key crypto.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	now := time.Now()
	c := jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "driver-7", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "reports:read"}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type whoState struct {
	Caller  string `json:"caller"`
	Subject string `json:"subject"`
	Scope   string `json:"scope"`
}

// whoAgents serve "who", whose node writes down whom it runs for, as
// a tool acting for the user would read it.
func whoAgents(t *testing.T) *server.Registry {
	g := graph.New[whoState]("who")
	g.Node("look", func(ctx context.Context, s whoState) (whoState, error) {
		s.Caller = server.Caller(ctx)
		if u, ok := server.Identity(ctx); ok {
			s.Subject = u.Subject
			s.Scope, _ = u.Claims["scope"].(string)
		}
		return s, nil
	}).Edge(graph.Start, "look").Edge("look", graph.End)
	var r server.Registry
	if err := r.Register(server.Agent{Name: "who", Description: "says whom it runs for", Build: server.Compile(g)}); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestJWTReachesTheRun: a token of the configured issuer reaches the
// run's node as the user's identity, and the user owns its threads as a
// key does; an API key still works beside tokens.
func TestJWTReachesTheRun(t *testing.T) {
	iss := newIssuer(t)
	ts := startServer(t, server.Options{Agents: whoAgents(t), Keys: []string{"key-a"},
		JWT: server.JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: iss.url}})

	for _, tc := range []struct {
		name string
		tok  string
	}{
		{"ES256", token(t, jwt.SigningMethodES256, iss.ec, "ec1", nil)},
		{"EdDSA", token(t, jwt.SigningMethodEdDSA, iss.ed, "ed1", nil)},
	} {
		st, b := call(t, "POST", ts.URL+"/threads/t1/runs/wait", tc.tok, map[string]any{"assistant_id": "who", "input": map[string]any{}, "if_not_exists": "create"})
		if st != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", tc.name, st, b)
		}
		var got whoState
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, b)
		}
		if got.Subject != "driver-7" || got.Scope != "reports:read" || !strings.HasPrefix(got.Caller, "user:") {
			t.Errorf("%s: the node saw %+v; want subject driver-7, its scope, and a user's caller id", tc.name, got)
		}
	}
	// The user's thread is the user's: the key does not find it.
	if st, b := call(t, "GET", ts.URL+"/threads/t1", "key-a", nil); st != http.StatusNotFound {
		t.Errorf("the key reads the user's thread: HTTP %d %s", st, b)
	}
	st, b := call(t, "POST", ts.URL+"/runs/wait", "key-a", map[string]any{"assistant_id": "who", "input": map[string]any{}})
	var got whoState
	json.Unmarshal(b, &got)
	if st != http.StatusOK || got.Subject != "" || !strings.HasPrefix(got.Caller, "key:") {
		t.Errorf("with the API key: HTTP %d, the node saw %+v; want the key's caller and no user", st, got)
	}
	if n := iss.fetches.Load(); n != 1 {
		t.Errorf("the JWKS was fetched %d times; want once, then cached", n)
	}
}

// TestJWTRefused: tokens that are expired, for another audience or
// issuer, signed by a key the issuer does not publish, unsigned (alg
// none) or signed with HMAC are refused with 401 saying why in words,
// and no key material.
func TestJWTRefused(t *testing.T) {
	iss := newIssuer(t)
	ts := startServer(t, server.Options{Agents: whoAgents(t),
		JWT: server.JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: iss.url}})
	foreign, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "x",
		"exp": time.Now().Add(hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := iss.ec.PublicKey.Bytes()
	for _, tc := range []struct {
		name, tok, want string
	}{
		{"expired", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"exp": time.Now().Add(-hour).Unix(), "iat": time.Now().Add(-2 * hour).Unix()}), "expired"},
		{"not yet", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"nbf": time.Now().Add(hour).Unix()}), "not valid yet"},
		{"no exp", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"exp": nil}), "no expiry"},
		{"wrong audience", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"aud": "another-app"}), "another audience"},
		{"wrong issuer", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"iss": "https://evil.example.com/"}), "another issuer"},
		{"no subject", token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"sub": nil}), "no subject"},
		{"foreign key, issuer's kid", token(t, jwt.SigningMethodES256, foreign, "ec1", nil), "signature does not verify"},
		{"foreign key, unknown kid", token(t, jwt.SigningMethodES256, foreign, "mine", nil), `key "mine"`},
		{"alg none", none, `"none"`},
		{"HMAC with the public key", token(t, jwt.SigningMethodHS256, pt, "ec1", nil), `"HS256"`},
		{"EdDSA with the EC key's kid", token(t, jwt.SigningMethodEdDSA, iss.ed, "ec1", nil), "EdDSA"},
		{"not a JWT", "a.b.c", "not a well-formed JWT"},
		{"no token", "", "missing bearer token"},
	} {
		st, b := call(t, "POST", ts.URL+"/runs/wait", tc.tok, map[string]any{"assistant_id": "who", "input": map[string]any{}})
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(b, &e)
		if st != http.StatusUnauthorized || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: HTTP %d %s; want 401 saying %q", tc.name, st, b, tc.want)
		}
		for _, secret := range []string{base64.RawURLEncoding.EncodeToString(pt[1:33]), "BEGIN"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s: the error shows key material: %s", tc.name, b)
			}
		}
	}
}

// TestJWTConfig: a server with a JWKS file takes its tokens, and one
// configured without an audience, with an http JWKS URL off loopback,
// or with a file holding no signing key does not start.
func TestJWTConfig(t *testing.T) {
	iss := newIssuer(t)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, iss.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, server.Options{Agents: whoAgents(t), JWT: server.JWT{Issuer: testIssuer, Audience: testAudience, JWKSFile: file}})
	st, b := call(t, "POST", ts.URL+"/runs/wait", token(t, jwt.SigningMethodES256, iss.ec, "ec1", nil), map[string]any{"assistant_id": "who", "input": map[string]any{}})
	if st != http.StatusOK || !strings.Contains(string(b), "driver-7") {
		t.Errorf("with a JWKS file: HTTP %d %s", st, b)
	}
	if iss.fetches.Load() != 0 {
		t.Errorf("a JWKS file's server fetched the URL")
	}

	empty := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(empty, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), 0o600)
	for name, cfg := range map[string]server.JWT{
		"no audience":    {Issuer: testIssuer, JWKSURL: iss.url},
		"http off host":  {Issuer: testIssuer, Audience: testAudience, JWKSURL: "http://id.example.com/jwks.json"},
		"both sources":   {Issuer: testIssuer, Audience: testAudience, JWKSURL: iss.url, JWKSFile: file},
		"no signing key": {Issuer: testIssuer, Audience: testAudience, JWKSFile: empty},
	} {
		_, err := server.New(context.Background(), server.Options{Agents: whoAgents(t), Database: filepath.Join(t.TempDir(), "loom.db"), JWT: cfg})
		if err == nil || !strings.Contains(err.Error(), "bearer tokens") {
			t.Errorf("%s: New: %v; want an error about bearer tokens", name, err)
		}
	}
}

// TestJWTQuotas: on a server with tokens and no API keys, each user has
// its own rate bucket and thread count, as a key does.
func TestJWTQuotas(t *testing.T) {
	iss := newIssuer(t)
	ts := startServer(t, server.Options{Agents: whoAgents(t), Quotas: server.Quotas{RatePerKey: 0.01, Burst: 3, ThreadsPerKey: 1},
		JWT: server.JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: iss.url}})
	ann := token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"sub": "ann"})
	bob := token(t, jwt.SigningMethodES256, iss.ec, "ec1", jwt.MapClaims{"sub": "bob"})
	if st, b := call(t, "POST", ts.URL+"/threads", ann, map[string]any{}); st != http.StatusOK {
		t.Fatalf("ann's first thread: HTTP %d %s", st, b)
	}
	if st, b := call(t, "POST", ts.URL+"/threads", ann, map[string]any{}); st != http.StatusTooManyRequests || !strings.Contains(string(b), "threads") {
		t.Errorf("ann's second thread, over one per user: HTTP %d %s; want 429 about threads", st, b)
	}
	if st, b := call(t, "GET", ts.URL+"/threads/none", ann, nil); st != http.StatusNotFound {
		t.Errorf("ann's third request: HTTP %d %s; want 404, within the burst of 3", st, b)
	}
	if st, b := call(t, "GET", ts.URL+"/threads/none", ann, nil); st != http.StatusTooManyRequests || !strings.Contains(string(b), "rate limit") {
		t.Errorf("ann's fourth request: HTTP %d %s; want 429, over the burst", st, b)
	}
	if st, b := call(t, "POST", ts.URL+"/threads", bob, map[string]any{}); st != http.StatusOK {
		t.Errorf("bob's first thread, while ann is over her quotas: HTTP %d %s", st, b)
	}
}
