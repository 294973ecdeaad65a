package convo

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encoders   = map[string]*tiktokenCounter{}
)

type tiktokenCounter struct{ enc *tiktoken.Tiktoken }

// Count returns the number of tokens of text.
func (c *tiktokenCounter) Count(text string) int {
	return len(c.enc.EncodeOrdinary(text))
}

// Tiktoken returns a Counter for a tiktoken encoding ("cl100k_base",
// "o200k_base"), loaded once from the BPE files embedded in
// tiktoken-go-loader: no network. It installs the offline loader as
// tiktoken-go's global BPE loader.
func Tiktoken(encoding string) (Counter, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if c, ok := encoders[encoding]; ok {
		return c, nil
	}
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("convo load tiktoken encoding %s: %w", encoding, err)
	}
	c := &tiktokenCounter{enc: enc}
	encoders[encoding] = c
	return c, nil
}

// Estimate is a Counter that needs no tokenizer: one token per Han, kana
// or hangul character and one per four other bytes. It is the fallback
// when tiktoken cannot load, and cheap enough for rough budgets.
type Estimate struct{}

// Count returns the estimated number of tokens of text.
func (Estimate) Count(text string) int {
	cjk, other := 0, 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
			unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)) {
			cjk++
		} else {
			other += size
		}
		i += size
	}
	return cjk + (other+3)/4
}
