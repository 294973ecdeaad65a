package checkpoint_test

import (
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/savertest"
)

func TestMemory(t *testing.T) {
	savertest.Run(t, func(*testing.T) checkpoint.Saver { return checkpoint.NewMemory() })
}

func TestMemoryZeroValue(t *testing.T) {
	savertest.Run(t, func(*testing.T) checkpoint.Saver { return new(checkpoint.Memory) })
}
