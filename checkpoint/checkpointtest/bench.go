package checkpointtest

import (
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// BenchmarkLease measures one uncontended AcquireLease and ReleaseLease
// of a thread on s:
//
//	func BenchmarkLease(b *testing.B) { checkpointtest.BenchmarkLease(b, newSaver(b)) }
func BenchmarkLease(b *testing.B, s checkpoint.Leaser) {
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
