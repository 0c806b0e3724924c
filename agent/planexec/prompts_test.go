package planexec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatFindingsOrdersByStepNumber(t *testing.T) {
	tests := []struct {
		name     string
		findings map[string]string
		want     string
	}{
		{"none", nil, "(none yet)"},
		{"numeric order", map[string]string{"step_10: b": "B", "step_2: a": "A"}, "### step_2: a\nA\n\n### step_10: b\nB"},
		{"other keys first", map[string]string{"step_1: a": "A", "note": "N"}, "### note\nN\n\n### step_1: a\nA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, formatFindings(tt.findings))
		})
	}
}
