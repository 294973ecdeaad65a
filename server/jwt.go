package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/loomkit/loom/internal/text"
)

// This file lets a client present, besides an API key, a bearer token
// (a JWT) that an identity provider issued: the server checks it against
// the issuer's published keys (JWKS), and the user it names owns threads,
// quotas and a long-term store as an API key does, and reaches the run's
// nodes through Identity.

// JWT configures bearer tokens. Set Issuer, Audience and one of JWKSURL
// and JWKSFile to accept them; the zero JWT accepts none.
type JWT struct {
	// Issuer is the iss claim every token must carry, exactly.
	Issuer string
	// Audience is a value the token's aud claim must hold: the id this
	// server has at the issuer.
	Audience string
	// JWKSURL is where the issuer publishes its keys (https, or http on
	// loopback only). They are fetched when the server starts, again every
	// ten minutes, and when a token names a key not seen yet (at most
	// every 30 seconds).
	JWKSURL string
	// JWKSFile is a file that holds the issuer's keys as a JWKS, read
	// once when the server starts.
	JWKSFile string
	// Leeway is how far a token's exp, nbf and iat may be off the
	// server's clock (default 30s; at most 5m).
	Leeway time.Duration
}

// User is whom a verified bearer token names.
type User struct {
	// Issuer and Subject are the token's iss and sub claims.
	Issuer  string `json:"iss"`
	Subject string `json:"sub"`
	// Claims are all the token's claims, as JSON decodes them.
	Claims map[string]any `json:"claims,omitempty"`
}

// Owner is the id under which the server keeps what the user owns
// (threads, quotas, the long-term store); Caller returns it.
func (u User) Owner() string {
	sum := sha256.Sum256([]byte(u.Issuer + "\x00" + u.Subject))
	return "user:" + hex.EncodeToString(sum[:16])
}

type userKey struct{}

// Identity is the user whose bearer token a request presented, or that
// the run a node runs in was started by; false for an API key, no key,
// and runs that no user started (crons, expiries).
func Identity(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	if !ok || u == nil {
		return User{}, false
	}
	return *u, true
}

// withUser is ctx carrying u for Identity (ctx itself when u is nil).
func withUser(ctx context.Context, u *User) context.Context {
	if u == nil {
		return ctx
	}
	return context.WithValue(ctx, userKey{}, u)
}

// userOf is the user behind ctx, nil for none: what a run keeps.
func userOf(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

const (
	jwksMaxBytes = 1 << 20          // a JWKS document
	jwksMaxKeys  = 100              // keys kept from one
	jwksTimeout  = 10 * time.Second // a fetch
	jwksRefresh  = 10 * time.Minute // keys are fetched again after
	jwksRetry    = 30 * time.Second // the least time between fetches
	maxToken     = 32 << 10         // a bearer token, in bytes
	maxUsers     = 100_000          // users with a rate bucket
)

// tokenAlgs are the signing algorithms a key may verify; HMAC and none
// are never accepted.
var tokenAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// verifier checks bearer tokens against one issuer's keys.
type verifier struct {
	cfg    JWT
	client *http.Client

	mu      sync.Mutex
	keys    map[string]jwk // by kid
	fetched time.Time      // when keys were last fetched
	tried   time.Time      // when a fetch was last tried
	first   error          // why the fetch at start failed, if it did
}

// jwk is one public key of the issuer.
type jwk struct {
	kid, alg string // alg "" when the JWKS does not say
	pub      any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
}

// newVerifier checks cfg and reads the issuer's keys: a file's must
// parse; a URL's that cannot be fetched yet are fetched at first use.
func newVerifier(ctx context.Context, cfg JWT) (*verifier, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("bearer tokens: give the issuer (--jwt-issuer, LOOM_JWT_ISSUER)")
	case cfg.Audience == "":
		return nil, errors.New("bearer tokens: give the audience this server is known by at the issuer (--jwt-audience, LOOM_JWT_AUDIENCE)")
	case (cfg.JWKSURL == "") == (cfg.JWKSFile == ""):
		return nil, errors.New("bearer tokens: give one of the issuer's JWKS URL (--jwt-jwks-url, LOOM_JWT_JWKS_URL) and a JWKS file (--jwt-jwks-file, LOOM_JWT_JWKS_FILE)")
	case cfg.Leeway < 0 || cfg.Leeway > 5*time.Minute:
		return nil, fmt.Errorf("bearer tokens: leeway %s: want 0 to 5m", cfg.Leeway)
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	v := &verifier{cfg: cfg, keys: map[string]jwk{}}
	if cfg.JWKSFile != "" {
		b, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("bearer tokens: read JWKS file: %w", err)
		}
		if len(b) > jwksMaxBytes {
			return nil, fmt.Errorf("bearer tokens: JWKS file %s is over %d bytes", cfg.JWKSFile, jwksMaxBytes)
		}
		if v.keys, err = parseJWKS(b); err != nil {
			return nil, fmt.Errorf("bearer tokens: JWKS file %s: %w", cfg.JWKSFile, err)
		}
		return v, nil
	}
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("bearer tokens: JWKS URL %q: want an https URL (http only on loopback)", cfg.JWKSURL)
	}
	v.client = &http.Client{Timeout: jwksTimeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 || (req.URL.Scheme != "https" && !loopbackHost(req.URL.Hostname())) {
			return errors.New("JWKS redirect refused")
		}
		return nil
	}}
	v.mu.Lock()
	v.first = v.refresh(ctx)
	v.mu.Unlock()
	return v, nil
}

// loopbackHost reports whether host names this machine.
func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// refresh fetches the keys from the JWKS URL; v.mu is held.
func (v *verifier) refresh(ctx context.Context) error {
	v.tried = time.Now()
	ctx, cancel := context.WithTimeout(ctx, jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch JWKS from %s: %s", v.cfg.JWKSURL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	if len(b) > jwksMaxBytes {
		return fmt.Errorf("fetch JWKS from %s: over %d bytes", v.cfg.JWKSURL, jwksMaxBytes)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return fmt.Errorf("JWKS from %s: %w", v.cfg.JWKSURL, err)
	}
	v.keys, v.fetched = keys, time.Now()
	return nil
}

// errNoKeys: the issuer's keys cannot be had now (a 503, not the
// token's fault).
var errNoKeys = errors.New("the identity provider's keys cannot be fetched now")

// key returns the key named kid ("": the only key), fetching the keys
// again when they are old or kid is new to them.
func (v *verifier) key(ctx context.Context, kid string) (jwk, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k, ok := v.find(kid)
	if v.client != nil && (time.Since(v.fetched) > jwksRefresh || !ok) && time.Since(v.tried) > jwksRetry {
		if err := v.refresh(ctx); err != nil {
			if len(v.keys) == 0 {
				return jwk{}, fmt.Errorf("%w: %w", errNoKeys, err)
			}
		}
		k, ok = v.find(kid)
	}
	if !ok {
		if len(v.keys) == 0 && v.client != nil {
			return jwk{}, errNoKeys
		}
		if kid == "" {
			return jwk{}, errors.New("the token names no key (kid) and the issuer has several")
		}
		return jwk{}, fmt.Errorf("the token names key %q, which the issuer does not publish", text.Clip(kid, 64))
	}
	return k, nil
}

// find is the key kid, or the only key for kid "".
func (v *verifier) find(kid string) (jwk, bool) {
	if k, ok := v.keys[kid]; ok {
		return k, true
	}
	if kid == "" && len(v.keys) == 1 {
		for _, k := range v.keys {
			return k, true
		}
	}
	return jwk{}, false
}

// verify checks raw and returns the user it names. An error is one the
// client may read: it says what is wrong, never what the keys are.
func (v *verifier) verify(ctx context.Context, raw string) (*User, error) {
	if len(raw) > maxToken {
		return nil, fmt.Errorf("the token is over %d bytes", maxToken)
	}
	var claims jwt.MapClaims
	p := jwt.NewParser(jwt.WithValidMethods(tokenAlgs), jwt.WithIssuer(v.cfg.Issuer), jwt.WithAudience(v.cfg.Audience),
		jwt.WithLeeway(v.cfg.Leeway), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	tok, err := p.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := v.key(ctx, kid)
		if err != nil {
			if errors.Is(err, errNoKeys) {
				return nil, err
			}
			return nil, keyError{err}
		}
		alg := t.Method.Alg()
		if (k.alg != "" && k.alg != alg) || !algFits(k.pub, alg) {
			return nil, keyError{fmt.Errorf("the token is signed with %s, which its key is not for", alg)}
		}
		return k.pub, nil
	})
	if err != nil {
		return nil, tokenError(tok, err)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, errors.New("the token has no subject (sub)")
	}
	return &User{Issuer: v.cfg.Issuer, Subject: sub, Claims: claims}, nil
}

// keyError is why the key function found no key for a token, in words
// a client may read.
type keyError struct{ error }

// tokenError says in words why a token was refused.
func tokenError(tok *jwt.Token, err error) error {
	switch {
	case errors.Is(err, errNoKeys):
		return errNoKeys
	case errors.Is(err, jwt.ErrTokenMalformed):
		return errors.New("the token is not a well-formed JWT")
	case errors.Is(err, jwt.ErrTokenExpired):
		return errors.New("the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return errors.New("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return errors.New("the token is for another audience than this server")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return errors.New("the token comes from another issuer than this server trusts")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return errors.New("the token has no expiry (exp)")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		var ke keyError
		if errors.As(err, &ke) {
			return ke.error
		}
		return errors.New("the token cannot be verified")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		if tok != nil {
			if alg, _ := tok.Header["alg"].(string); !slices.Contains(tokenAlgs, alg) {
				return fmt.Errorf("the token is signed with %q, which this server does not accept (it accepts %s)", text.Clip(alg, 16), strings.Join(tokenAlgs, ", "))
			}
		}
		return errors.New("the token's signature does not verify against the issuer's keys")
	}
	return errors.New("the token is not valid")
}

// algFits reports whether pub may verify a signature made with alg.
func algFits(pub any, alg string) bool {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}[k.Curve.Params().Name] == alg
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// parseJWKS reads the signing keys of a JWKS: RSA (2048 bits or more),
// EC on P-256, P-384 or P-521, and Ed25519. Keys for encryption, and
// symmetric keys, are left out; a set with no key left is an error.
func parseJWKS(b []byte) (map[string]jwk, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Alg, Crv, N, E, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	keys := map[string]jwk{}
	var skipped []string
	for i, k := range set.Keys {
		if len(keys) == jwksMaxKeys {
			break
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Alg != "" && !slices.Contains(tokenAlgs, k.Alg) {
			skipped = append(skipped, fmt.Sprintf("key %d: algorithm %q", i, text.Clip(k.Alg, 16)))
			continue
		}
		pub, err := publicKey(k.Kty, k.Crv, k.N, k.E, k.X, k.Y)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		if _, dup := keys[k.Kid]; dup {
			skipped = append(skipped, fmt.Sprintf("key %d: kid %q again", i, text.Clip(k.Kid, 64)))
			continue
		}
		keys[k.Kid] = jwk{kid: k.Kid, alg: k.Alg, pub: pub}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no signing key this server can use (%s)", strings.Join(append(skipped, fmt.Sprintf("%d keys", len(set.Keys))), "; "))
	}
	return keys, nil
}

// publicKey decodes one JWK's public key.
func publicKey(kty, crv, n, e, x, y string) (any, error) {
	dec := base64.RawURLEncoding.DecodeString
	switch kty {
	case "RSA":
		nb, err1 := dec(n)
		eb, err2 := dec(e)
		if err := errors.Join(err1, err2); err != nil || len(eb) == 0 || len(eb) > 4 {
			return nil, errors.New("RSA key with a bad n or e")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: int(new(big.Int).SetBytes(eb).Int64())}
		if pub.N.BitLen() < 2048 || pub.E < 3 || pub.E%2 == 0 {
			return nil, fmt.Errorf("RSA key of %d bits or with exponent %d (want 2048 bits or more, an odd exponent)", pub.N.BitLen(), pub.E)
		}
		return pub, nil
	case "EC":
		curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[crv]
		if curve == nil {
			return nil, fmt.Errorf("EC curve %q", text.Clip(crv, 16))
		}
		xb, err1 := dec(x)
		yb, err2 := dec(y)
		size := (curve.Params().BitSize + 7) / 8
		if errors.Join(err1, err2) != nil || len(xb) != size || len(yb) != size {
			return nil, errors.New("EC key with a bad x or y")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, xb...), yb...))
		if err != nil {
			return nil, errors.New("EC key not on its curve")
		}
		return pub, nil
	case "OKP":
		xb, err := dec(x)
		if crv != "Ed25519" || err != nil || len(xb) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("OKP key on %q (want an Ed25519 key)", text.Clip(crv, 16))
		}
		return ed25519.PublicKey(xb), nil
	}
	return nil, fmt.Errorf("key type %q", text.Clip(kty, 16))
}

// useJWT sets up bearer tokens when opts.JWT asks for them: a user is
// an owner like a key, so the counts of Quotas apply, and a rate bucket
// is made at the user's first request.
func (s *Server) useJWT(ctx context.Context) error {
	if s.opts.JWT == (JWT{}) {
		return nil
	}
	v, err := newVerifier(ctx, s.opts.JWT)
	if err != nil {
		return err
	}
	s.jwt = v
	if v.first != nil {
		s.log.Warn("bearer tokens are refused until the issuer's keys can be fetched", "err", v.first)
	}
	s.quotas.keyless = false
	if q := s.quotas; q.RatePerKey >= 0 && q.Burst >= 0 {
		q.users = &userBuckets{limit: rate.Limit(q.RatePerKey), burst: q.Burst, m: map[string]*rate.Limiter{}}
	}
	return nil
}

// locked reports whether requests must say who they are: the server has
// API keys or takes bearer tokens.
func (s *Server) locked() bool { return len(s.keys) > 0 || s.jwt != nil }

// authorize returns the caller's owner id, and r carrying the user
// (see Identity) when it presented a bearer token that is a JWT; any
// other key is an API key (see authenticateKey).
func (s *Server) authorize(r *http.Request) (*http.Request, string, error) {
	if s.jwt == nil {
		owner, err := s.authenticateKey(r)
		return r, owner, err
	}
	tok := ""
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		tok = strings.TrimSpace(a[7:])
	}
	if strings.Count(tok, ".") != 2 || r.Header.Get("x-api-key") != "" {
		if len(s.keys) == 0 {
			return r, "", errorf(http.StatusUnauthorized, "unauthorized", "missing bearer token: send Authorization: Bearer TOKEN with a token from %s", s.jwt.cfg.Issuer)
		}
		owner, err := s.authenticateKey(r)
		return r, owner, err
	}
	addr := clientAddr(r)
	if wait := s.authFails.wait(addr); wait > 0 {
		return r, "", throttled(wait)
	}
	u, err := s.jwt.verify(r.Context(), tok)
	switch {
	case errors.Is(err, errNoKeys):
		s.log.Warn("bearer token not checked", "err", err)
		return r, "", errorf(http.StatusServiceUnavailable, "unavailable", "bearer token not checked: %v; try again shortly", errNoKeys)
	case err != nil:
		s.authFails.failed(addr, r)
		return r, "", errorf(http.StatusUnauthorized, "invalid_token", "invalid bearer token: %v", err)
	}
	return r.WithContext(withUser(r.Context(), u)), u.Owner(), nil
}

// authenticate returns the caller's owner id (see authorize).
func (s *Server) authenticate(r *http.Request) (string, error) {
	_, owner, err := s.authorize(r)
	return owner, err
}

// userBuckets are the rate buckets of bearer-token users, made at a
// user's first request; at most maxUsers are kept, full ones dropped
// first.
type userBuckets struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

func (b *userBuckets) get(owner string) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.m[owner]; l != nil {
		return l
	}
	if len(b.m) >= maxUsers {
		for o, l := range b.m {
			if l.Tokens() >= float64(b.burst) {
				delete(b.m, o)
			}
		}
		for o := range b.m {
			if len(b.m) < maxUsers {
				break
			}
			delete(b.m, o)
		}
	}
	l := rate.NewLimiter(b.limit, b.burst)
	b.m[owner] = l
	return l
}
