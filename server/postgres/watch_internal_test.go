package postgres

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChannelNameIsAnIdentifierOfItsSchemaAlone(t *testing.T) {
	long := strings.Repeat("s", 60)
	for _, tc := range []struct {
		name, schema, want string
	}{
		{name: "a short schema is named", schema: "public", want: "agentgraph_server_public"},
		{name: "a long schema is hashed to fit 63 bytes", schema: long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := channelName(tc.schema)
			require.LessOrEqual(t, len(got), 63)
			if tc.want != "" {
				require.Equal(t, tc.want, got)
			}
			require.NotEqual(t, got, channelName(tc.schema+"x"), "another schema, another channel")
		})
	}
}
