package pgdb

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONBReplacesOnlyEscapedNuls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"plain"}`, `{"a":"plain"}`},
		{`{"a":"x\u0000y"}`, `{"a":"x\ufffdy"}`},
		{`["\u0000","\u0000"]`, `["\ufffd","\ufffd"]`},
		{`{"a":"\\u0000"}`, `{"a":"\\u0000"}`},           // a backslash, then the text u0000
		{`{"a":"\\\u0000"}`, `{"a":"\\\ufffd"}`},         // a backslash, then a NUL
		{`{"\u0000":"\u00001"}`, `{"\ufffd":"\ufffd1"}`}, // keys too
	} {
		got := JSONB([]byte(tc.in))
		require.Equal(t, tc.want, string(got), tc.in)
		require.True(t, json.Valid(got))
	}
}
