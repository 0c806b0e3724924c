package jsonb_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// The cases are PostgreSQL's answers to have::jsonb @> want::jsonb.
func TestContainsAnswersAsPostgreSQLsContainment(t *testing.T) {
	tests := []struct {
		have, want string
		ok         bool
	}{
		{`{"a":1,"b":2}`, `{"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":{"b":1,"c":2}}`, `{"a":{"b":1}}`, true},
		{`{"a":[1,2,3]}`, `{"a":[3,1]}`, true},
		{`{"a":[1,2,3]}`, `{"a":[4]}`, false},
		{`{"a":[{"x":1,"y":2}]}`, `{"a":[{"x":1}]}`, true},
		{`{"a":[1]}`, `{"a":1}`, false},
		{`{"a":{"b":1}}`, `{"a":"b"}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":null}`, `{"a":null}`, true},
		{`{}`, `{}`, true},
		{`{"a":1}`, `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.have+" @> "+tt.want, func(t *testing.T) {
			var have, want any
			require.NoError(t, json.Unmarshal([]byte(tt.have), &have))
			require.NoError(t, json.Unmarshal([]byte(tt.want), &want))
			require.Equal(t, tt.ok, jsonb.Contains(have, want))
		})
	}
}
