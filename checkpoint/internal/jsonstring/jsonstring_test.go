package jsonstring

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendWritesWhatMarshalWrites(t *testing.T) {
	for _, s := range []string{
		"", "plain", `q"uote\back`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
		"é ü 日本 🙂", "line\u2028para\u2029", "a\xffb\xc3", "\xed\xa0\x80", "\xfe", "end\xe2\x80",
	} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(Append([]byte("x"), s))[1:], "%q", s)
	}
}

func FuzzAppendWritesWhatMarshalWrites(f *testing.F) {
	f.Add("<&>\u2028\xff\"\\\n")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(Append(nil, s)))
	})
}
