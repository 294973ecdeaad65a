package seal_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/seal"
)

// key returns a 32-byte key filled with b.
func key(b byte) []byte { return bytes.Repeat([]byte{b}, seal.KeySize) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func keyring(t testing.TB, spec string) *seal.Keyring {
	t.Helper()
	k, err := seal.ParseKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	k1 = "k1:" + b64(key(1))
	k2 = "k2:" + b64(key(2))
)

func TestRoundTrip(t *testing.T) {
	k := keyring(t, k1)
	for _, plain := range []string{`{"secret":"hunter2","n":[1,2,3]}`, ``, `"a string"`, strings.Repeat("日本語 ", 5000)} {
		sealed, err := k.Seal([]byte(plain))
		if err != nil {
			t.Fatal(err)
		}
		if !seal.IsSealed(sealed) {
			t.Fatalf("Seal gave %.40q…, which IsSealed refuses", sealed)
		}
		var s string
		if err := json.Unmarshal(sealed, &s); err != nil {
			t.Fatalf("sealed value is not a JSON string: %v", err)
		}
		if plain != "" && bytes.Contains(sealed, []byte(plain)) {
			t.Fatal("sealed value holds the plain text")
		}
		got, err := k.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != plain {
			t.Fatalf("Open gave %.40q, want %.40q", got, plain)
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	k := keyring(t, k1)
	a, _ := k.Seal([]byte(`{"a":1}`))
	b, _ := k.Seal([]byte(`{"a":1}`))
	if bytes.Equal(a, b) {
		t.Fatal("the same value sealed twice gave the same bytes")
	}
}

func TestRotation(t *testing.T) {
	old := keyring(t, k1)
	sealed, err := old.Seal([]byte(`{"v":"old"}`))
	if err != nil {
		t.Fatal(err)
	}
	rotated := keyring(t, k2+","+k1)
	got, err := rotated.Open(sealed)
	if err != nil || string(got) != `{"v":"old"}` {
		t.Fatalf("a keyring listing k1 second opened a k1 value as %q, %v", got, err)
	}
	fresh, err := rotated.Seal([]byte(`{"v":"new"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(fresh, []byte(`"sealed:aes256gcm:k2:`)) {
		t.Fatalf("new writes should use k2, the first key: %.30s", fresh)
	}
	if rotated.SealingKey() != "k2" {
		t.Fatalf("SealingKey = %q, want k2", rotated.SealingKey())
	}
	// k1 alone cannot open what k2 sealed.
	if _, err := old.Open(fresh); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("k1 alone opening a k2 value: %v, want ErrUnknownKey", err)
	}
}

func TestUnknownKeyID(t *testing.T) {
	sealed, _ := keyring(t, "gone:"+b64(key(9))).Seal([]byte(`{}`))
	_, err := keyring(t, k1+","+k2).Open(sealed)
	if !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("got %v, want ErrUnknownKey", err)
	}
	for _, want := range []string{`"gone"`, "k1, k2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestTampered(t *testing.T) {
	k := keyring(t, k1+","+k2)
	sealed, err := k.Seal([]byte(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	body := len(`"sealed:aes256gcm:k1:`)
	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return b
	}
	// The same ciphertext under the header of another key the keyring
	// holds: the header is authenticated, so it must not open.
	swapped := bytes.Replace(bytes.Clone(sealed), []byte(":k1:"), []byte(":k2:"), 1)
	for name, bad := range map[string][]byte{
		"nonce byte":         flip(body + 2),
		"ciphertext byte":    flip(body + 20),
		"tag byte":           flip(len(sealed) - 4),
		"cut short":          append(bytes.Clone(sealed[:body+10]), '"'),
		"closing quote cut":  sealed[:len(sealed)-1],
		"all but the header": sealed[:body],
		"not base64":         append(append(bytes.Clone(sealed[:body]), "!!!!"...), '"'),
		"key id swapped":     swapped,
	} {
		if _, err := k.Open(bad); !errors.Is(err, seal.ErrTampered) {
			t.Errorf("%s: got %v, want ErrTampered", name, err)
		}
	}
}

func TestNilKeyring(t *testing.T) {
	sealed, _ := keyring(t, k1).Seal([]byte(`{}`))
	for _, k := range []*seal.Keyring{nil, {}} {
		if _, err := k.Seal([]byte(`{}`)); !errors.Is(err, seal.ErrBadKeys) {
			t.Errorf("%v: Seal gave %v, want ErrBadKeys", k, err)
		}
		if _, err := k.Open(sealed); !errors.Is(err, seal.ErrUnknownKey) {
			t.Errorf("%v: Open of a sealed value gave %v, want ErrUnknownKey", k, err)
		}
		if got, err := k.Open([]byte(`{"a":1}`)); err != nil || string(got) != `{"a":1}` {
			t.Errorf("%v: Open of a plain value gave %q, %v", k, got, err)
		}
	}
}

func TestOpenPassesPlainValues(t *testing.T) {
	k := keyring(t, k1)
	for _, plain := range []string{`{"written":"before sealing"}`, `"sealed"`, `"sealed:other:x"`, ``} {
		got, err := k.Open([]byte(plain))
		if err != nil || string(got) != plain {
			t.Errorf("Open(%q) = %q, %v; want it unchanged", plain, got, err)
		}
	}
}

func TestParseKeys(t *testing.T) {
	secret := b64(key(7))
	for _, tc := range []struct {
		spec, want string
	}{
		{"", "no keys listed"},
		{" , ", "no keys listed"},
		{"k1", "entry 1: want id:base64key"},
		{"k1:" + secret + ",k2", "entry 2: want id:base64key"},
		{":" + secret, "empty key id"},
		{"k 1:" + secret, `key id "k 1"`},
		{"k1:%%%%", `key "k1" is not base64`},
		{"k1:" + b64(key(1)[:16]), `key "k1" is 16 bytes; want 32`},
		{"k1:" + secret + ",k1:" + b64(key(2)), `key id "k1" is listed twice`},
	} {
		_, err := seal.ParseKeys(tc.spec)
		if !errors.Is(err, seal.ErrBadKeys) {
			t.Errorf("ParseKeys(%q) = %v, want ErrBadKeys", tc.spec, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKeys(%q): %q does not say %q", tc.spec, err, tc.want)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), b64(key(1))[:16]) {
			t.Errorf("ParseKeys(%q): the error quotes a key: %q", tc.spec, err)
		}
	}
	// URL base64 without padding, and spaces around entries, are taken.
	url := base64.RawURLEncoding.EncodeToString(key(0xfb))
	k, err := seal.ParseKeys(" a.1 : " + url + " , b_2:" + b64(key(3)))
	if err != nil {
		t.Fatal(err)
	}
	if k.SealingKey() != "a.1" {
		t.Fatalf("SealingKey = %q, want a.1", k.SealingKey())
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(seal.EnvKeys, "")
	if k, err := seal.FromEnv(); k != nil || err != nil {
		t.Fatalf("unset: got %v, %v; want nil, nil", k, err)
	}
	t.Setenv(seal.EnvKeys, "k1:short")
	if _, err := seal.FromEnv(); !errors.Is(err, seal.ErrBadKeys) || !strings.Contains(err.Error(), seal.EnvKeys) {
		t.Fatalf("bad value: got %v, want an error naming %s", err, seal.EnvKeys)
	}
	t.Setenv(seal.EnvKeys, k2+","+k1)
	k, err := seal.FromEnv()
	if err != nil || k.SealingKey() != "k2" {
		t.Fatalf("got %v, %v; want the keyring sealing with k2", k, err)
	}
}

// BenchmarkSeal and BenchmarkOpen measure one value of each size.
func BenchmarkSeal(b *testing.B) {
	k := keyring(b, k1)
	for _, n := range []int{256, 4 << 10, 64 << 10} {
		plain := bytes.Repeat([]byte("x"), n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Seal(plain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	k := keyring(b, k1)
	for _, n := range []int{256, 4 << 10, 64 << 10} {
		sealed, _ := k.Seal(bytes.Repeat([]byte("x"), n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Open(sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzOpen: whatever is stored, Open returns the value, the plain text
// or an error, never a panic; a value that opens was sealed by the keys.
func FuzzOpen(f *testing.F) {
	k := keyring(f, k1)
	good, _ := k.Seal([]byte(`{"a":1}`))
	for _, s := range [][]byte{good, good[:len(good)-1], []byte(`"sealed:aes256gcm:"`), []byte(`"sealed:aes256gcm:k1:"`), []byte(`{}`), nil} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, err := k.Open(b)
		if err == nil && seal.IsSealed(b) && !bytes.Equal(plain, []byte(`{"a":1}`)) {
			t.Fatalf("a forged value %q opened as %q", b, plain)
		}
	})
}
