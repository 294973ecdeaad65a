// Package seal encrypts values at rest: checkpoints and long-term store
// items, so that a copy of the database file (or a dump of its tables)
// reveals no state.
//
// A Keyring seals with AES-256-GCM under the first of its keys and opens
// with any of them: a sealed value names the id of the key that sealed
// it, so keys rotate by putting a new key first and keeping the old ones
// listed until nothing sealed with them is left. The sealed form is a
// JSON string,
//
//	"sealed:aes256gcm:<key id>:<base64 of nonce, ciphertext and tag>"
//
// so it fits wherever JSON is stored. Values that are not sealed (those
// written before sealing was turned on) open as they are.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Sentinel errors that callers branch on.
var (
	// ErrUnknownKey: a value was sealed with a key id the keyring does
	// not hold (a key removed too early, or another deployment's data).
	ErrUnknownKey = errors.New("sealed with an unknown key")
	// ErrTampered: a sealed value does not open: it was changed or cut
	// after it was sealed, or sealed under another key of the same id.
	ErrTampered = errors.New("sealed value does not open: changed or damaged")
	// ErrBadKeys: the keys given to ParseKeys (LOOM_ENCRYPTION_KEYS) are
	// malformed; the error's text says which and why.
	ErrBadKeys = errors.New("bad encryption keys")
)

// EnvKeys is the environment variable FromEnv reads.
const EnvKeys = "LOOM_ENCRYPTION_KEYS"

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// prefix starts every sealed value: the opening quote of the JSON string,
// the marker and the algorithm.
const prefix = `"sealed:aes256gcm:`

// maxKeyID bounds a key id's length.
const maxKeyID = 64

// Codec seals values before they are stored and opens them when read.
// Open returns a value that was never sealed unchanged.
type Codec interface {
	// Seal returns plain encrypted, as a JSON string.
	Seal(plain []byte) ([]byte, error)
	// Open returns the plain value of sealed, or sealed itself when it is
	// not a sealed value.
	Open(sealed []byte) ([]byte, error)
}

// Key is one AES-256 key and its id.
type Key struct {
	// ID names the key in what it seals: letters, digits, '-', '_' and
	// '.', at most 64 of them.
	ID string
	// Secret is the key, KeySize bytes.
	Secret []byte
}

// Keyring is a Codec with AES-256-GCM keys: it seals with the first and
// opens with any. It is safe for concurrent use. Make one with NewKeyring,
// ParseKeys or FromEnv; a nil or zero Keyring seals nothing (an error)
// and opens only values that are not sealed.
type Keyring struct {
	first string
	aeads map[string]cipher.AEAD
}

// NewKeyring returns a keyring over keys, the first of which seals. A
// key of the wrong size, a malformed or repeated id, or no key at all is
// an error wrapping ErrBadKeys.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrBadKeys)
	}
	k := &Keyring{first: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, key := range keys {
		if err := checkID(key.ID); err != nil {
			return nil, fmt.Errorf("%w: key %d: %v", ErrBadKeys, i+1, err)
		}
		if _, ok := k.aeads[key.ID]; ok {
			return nil, fmt.Errorf("%w: key id %q is listed twice", ErrBadKeys, key.ID)
		}
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("%w: key %q is %d bytes; want %d (AES-256)", ErrBadKeys, key.ID, len(key.Secret), KeySize)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrBadKeys, key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrBadKeys, key.ID, err)
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

func checkID(id string) error {
	if id == "" {
		return errors.New("empty key id")
	}
	if len(id) > maxKeyID {
		return fmt.Errorf("key id of %d characters; at most %d", len(id), maxKeyID)
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("key id %q: use letters, digits, '-', '_' and '.'", id)
		}
	}
	return nil
}

// ParseKeys reads keys written as LOOM_ENCRYPTION_KEYS holds them:
// "id1:base64key,id2:base64key", each key 32 bytes in standard or URL
// base64 (padded or not); the first seals. Errors wrap ErrBadKeys and
// never quote a key.
func ParseKeys(s string) (*Keyring, error) {
	var keys []Key
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d: want id:base64key", ErrBadKeys, i+1)
		}
		id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
		secret, err := decodeKey(b64)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q is not base64", ErrBadKeys, id)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys listed; want id:base64key[,id:base64key…]", ErrBadKeys)
	}
	return NewKeyring(keys...)
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// FromEnv returns the keyring LOOM_ENCRYPTION_KEYS holds, or nil (and no
// error) when it is unset or empty: values are then stored in the clear.
func FromEnv() (*Keyring, error) {
	v := strings.TrimSpace(os.Getenv(EnvKeys))
	if v == "" {
		return nil, nil
	}
	k, err := ParseKeys(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvKeys, err)
	}
	return k, nil
}

// SealingKey returns the id of the key that seals.
func (k *Keyring) SealingKey() string {
	if k == nil {
		return ""
	}
	return k.first
}

// Seal encrypts plain under the first key with a fresh random nonce.
func (k *Keyring) Seal(plain []byte) ([]byte, error) {
	if k == nil || k.aeads[k.first] == nil {
		return nil, fmt.Errorf("seal: %w: the keyring holds no keys", ErrBadKeys)
	}
	aead := k.aeads[k.first]
	head := len(prefix) + len(k.first) + 1
	ns := aead.NonceSize()
	raw := make([]byte, ns, ns+len(plain)+aead.Overhead())
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	out := make([]byte, head, head+base64.StdEncoding.EncodedLen(cap(raw))+1)
	copy(out, prefix)
	copy(out[len(prefix):], k.first)
	out[head-1] = ':'
	// The header is authenticated too, so a key id cannot be swapped.
	raw = aead.Seal(raw, raw[:ns], plain, out)
	out = base64.StdEncoding.AppendEncode(out, raw)
	return append(out, '"'), nil
}

// Open decrypts a value Seal made; a value that is not sealed comes back
// as it is. A key id the keyring lacks gives ErrUnknownKey; a value
// changed after it was sealed gives ErrTampered.
func (k *Keyring) Open(sealed []byte) ([]byte, error) {
	if !IsSealed(sealed) {
		return sealed, nil
	}
	if sealed[len(sealed)-1] != '"' {
		return nil, fmt.Errorf("open sealed value: %w: cut short", ErrTampered)
	}
	rest := sealed[len(prefix) : len(sealed)-1]
	i := bytes.IndexByte(rest, ':')
	if i < 0 {
		return nil, fmt.Errorf("open sealed value: %w: no key id", ErrTampered)
	}
	id := rest[:i]
	if k == nil || len(k.aeads) == 0 {
		return nil, fmt.Errorf("open sealed value: key id %q: %w (the keyring holds no keys)", id, ErrUnknownKey)
	}
	aead, ok := k.aeads[string(id)]
	if !ok {
		return nil, fmt.Errorf("open sealed value: key id %q: %w (the keys listed are %s)", id, ErrUnknownKey, strings.Join(k.ids(), ", "))
	}
	header := sealed[:len(prefix)+i+1]
	raw, err := base64.StdEncoding.AppendDecode(nil, rest[i+1:])
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("open sealed value (key %q): %w", id, ErrTampered)
	}
	ns := aead.NonceSize()
	plain, err := aead.Open(raw[ns:ns], raw[:ns], raw[ns:], header)
	if err != nil {
		return nil, fmt.Errorf("open sealed value (key %q): %w", id, ErrTampered)
	}
	return plain, nil
}

// ids lists the keyring's key ids, the sealing one first.
func (k *Keyring) ids() []string {
	ids := []string{k.first}
	for _, id := range slices.Sorted(maps.Keys(k.aeads)) {
		if id != k.first {
			ids = append(ids, id)
		}
	}
	return ids
}

// IsSealed reports whether b starts as a sealed value does (whether or
// not it opens).
func IsSealed(b []byte) bool {
	return bytes.HasPrefix(b, []byte(prefix))
}
