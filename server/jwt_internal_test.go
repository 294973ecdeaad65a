package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkJWTVerify measures checking one ES256 token against a JWKS
// held in memory: what a bearer token adds to a request.
func BenchmarkJWTVerify(b *testing.B) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	pt, _ := k.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "kid": "k", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])}}})
	file := filepath.Join(b.TempDir(), "jwks.json")
	os.WriteFile(file, set, 0o600)
	v, err := newVerifier(context.Background(), JWT{Issuer: "i", Audience: "a", JWKSFile: file})
	if err != nil {
		b.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": "i", "aud": "a", "sub": "u", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k"
	raw, err := tok.SignedString(k)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.verify(context.Background(), raw); err != nil {
			b.Fatal(err)
		}
	}
}
