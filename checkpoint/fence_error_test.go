package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func TestFencedErrorSaysWhatBecameOfTheLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  checkpoint.FencedError
		want string
	}{
		{"released", checkpoint.FencedError{ThreadID: "t", Fence: 2, Current: 2},
			`checkpoint: thread "t": write refused: its lease (fence 2) was released or taken over since, and nobody holds the thread now (fence 2)`},
		{"taken over", checkpoint.FencedError{ThreadID: "t", Fence: 2, Holder: "b", Current: 3},
			`checkpoint: thread "t": write refused: its lease (fence 2) was taken over by b (fence 3)`},
		{"not issued: the current fence", checkpoint.FencedError{ThreadID: "t", Fence: 1, Holder: "a", Current: 1},
			`checkpoint: thread "t": write refused: its lease (fence 1) is not one this saver issued for the thread (another database's, or its token altered); a holds the thread (fence 1)`},
		{"not issued: a later fence", checkpoint.FencedError{ThreadID: "t", Fence: 7, Holder: "a", Current: 1},
			`checkpoint: thread "t": write refused: its lease (fence 7) is not one this saver issued for the thread (another database's, or its token altered); a holds the thread (fence 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, &tc.err, tc.want)
			require.ErrorIs(t, &tc.err, checkpoint.ErrLeaseLost)
		})
	}
}
