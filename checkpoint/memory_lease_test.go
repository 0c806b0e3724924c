package checkpoint_test

import (
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func BenchmarkMemoryLease(b *testing.B) {
	s := checkpoint.NewMemory()
	ctx := b.Context()
	for b.Loop() {
		l, err := s.AcquireLease(ctx, "bench", "bench", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}
