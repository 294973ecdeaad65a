package report

import (
	"context"
	"errors"
	"testing"
)

// TestReadWaitsForAPlace: with both places taken, a read waits, and one
// whose context ends gives up without reading.
func TestReadWaitsForAPlace(t *testing.T) {
	for range cap(reading) {
		reading <- struct{}{}
	}
	defer func() {
		for range cap(reading) {
			<-reading
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Toolkit{}.Read(ctx, kindXLSX, []byte("PK"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with every place taken and its context ended: %v, want context.Canceled", err)
	}
}
