package openai

import (
	"context"
	"time"
)

// SetWait replaces the sleep between attempts, so tests can see the waits
// without taking them.
func SetWait(m *Model, f func(ctx context.Context, d time.Duration) error) { m.wait = f }

// SetJitter replaces the random source of the backoff jitter.
func SetJitter(m *Model, f func() float64) { m.jitter = f }

// SetEmbedWait replaces an Embedder's sleep between attempts.
func SetEmbedWait(e *Embedder, f func(ctx context.Context, d time.Duration) error) { e.m.wait = f }
