package checkpoint_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func BenchmarkMemoryLease(b *testing.B) { checkpointtest.BenchmarkLease(b, checkpoint.NewMemory()) }
