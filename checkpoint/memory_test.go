package checkpoint_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func TestMemoryConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return checkpoint.NewMemory()
	})
}
