package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/store"
)

func TestValidateNamespaceMessages(t *testing.T) {
	tests := []struct {
		ns   []string
		want string
	}{
		{nil, "Namespace cannot be empty."},
		{[]string{}, "Namespace cannot be empty."},
		{[]string{"a", ""}, `Namespace labels cannot be empty strings. Got "" in ("a", "")`},
		{[]string{"a", "b.c"}, `Invalid namespace label "b.c" found in ("a", "b.c"). Namespace labels cannot contain periods ('.').`},
		{[]string{"agentgraph", "x"}, `Root label for namespace cannot be "agentgraph". Got: ("agentgraph", "x")`},
	}
	for _, tt := range tests {
		err := store.ValidateNamespace(tt.ns)
		nerr, ok := err.(*store.InvalidNamespaceError)
		require.True(t, ok, "%q: %v", tt.ns, err)
		require.Equal(t, tt.want, nerr.Error())
	}
	require.NoError(t, store.ValidateNamespace([]string{"x", "agentgraph"}))
	require.NoError(t, store.ValidatePrefix(nil))
	require.NoError(t, store.ValidatePrefix([]string{"agentgraph", "*"}))
}

func TestNewSearchConfig(t *testing.T) {
	cfg, err := store.NewSearchConfig()
	require.NoError(t, err)
	require.Equal(t, store.SearchConfig{Limit: 10, RefreshTTL: true}, cfg)

	cfg, err = store.NewSearchConfig(
		store.Filter(map[string]any{"b": map[string]any{"$lt": int8(3), "$gt": 1}, "a": []int{1}}),
		store.Filter(map[string]any{"a": "x"}),
		store.Limit(3), store.Offset(4), store.RefreshTTL(false), nil,
	)
	require.NoError(t, err)
	want := store.SearchConfig{
		Filter: []store.Condition{
			{Key: "a", Op: store.Eq, Value: []any{1.0}},
			{Key: "a", Op: store.Eq, Value: "x"},
			{Key: "b", Op: store.Gt, Value: 1.0},
			{Key: "b", Op: store.Lt, Value: 3.0},
		},
		Limit: 3, Offset: 4,
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Fatalf("config mismatch (-want +got):\n%s", diff)
	}
	require.False(t, cfg.Match(map[string]any{"a": []any{1.0}, "b": 2.0}), "a cannot be both [1] and \"x\"")
}

func TestConditionMatch(t *testing.T) {
	v := map[string]any{"n": 2.0, "s": "m", "b": true, "z": nil, "o": map[string]any{"k": []any{1.0, "x"}}}
	tests := []struct {
		c    store.Condition
		want bool
	}{
		{store.Condition{Key: "n", Op: store.Eq, Value: 2.0}, true},
		{store.Condition{Key: "n", Op: store.Ne, Value: 2.0}, false},
		{store.Condition{Key: "n", Op: store.Gte, Value: 2.0}, true},
		{store.Condition{Key: "n", Op: store.Gt, Value: 2.0}, false},
		{store.Condition{Key: "n", Op: store.Lte, Value: 2.0}, true},
		{store.Condition{Key: "n", Op: store.Lt, Value: "3"}, false},
		{store.Condition{Key: "s", Op: store.Lt, Value: "n"}, true},
		{store.Condition{Key: "s", Op: store.Gt, Value: "M"}, true},
		{store.Condition{Key: "b", Op: store.Gt, Value: 0.0}, false},
		{store.Condition{Key: "b", Op: store.Eq, Value: true}, true},
		{store.Condition{Key: "z", Op: store.Eq, Value: nil}, true},
		{store.Condition{Key: "z", Op: store.Ne, Value: nil}, false},
		{store.Condition{Key: "missing", Op: store.Eq, Value: nil}, false},
		{store.Condition{Key: "missing", Op: store.Ne, Value: 1.0}, false},
		{store.Condition{Key: "o", Op: store.Eq, Value: map[string]any{"k": []any{1.0, "x"}}}, true},
		{store.Condition{Key: "o", Op: store.Eq, Value: map[string]any{}}, false},
		{store.Condition{Key: "o", Op: store.Ne, Value: map[string]any{"k": []any{"x", 1.0}}}, true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.c.Match(v), "%+v", tt.c)
	}
}

func TestNewListConfig(t *testing.T) {
	cfg, err := store.NewListConfig()
	require.NoError(t, err)
	require.Equal(t, 100, cfg.Limit)
	require.Zero(t, cfg.MaxDepth)

	cfg, err = store.NewListConfig(store.Prefix("a", "*", "c"), store.Suffix("z"), store.MaxDepth(2), store.Limit(5), store.Offset(1))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "*", "c"}, cfg.Prefix)
	require.Equal(t, []string{"a"}, cfg.LiteralPrefix())
	require.True(t, cfg.Match([]string{"a", "b", "c", "z"}))
	require.False(t, cfg.Match([]string{"a", "b", "c"}))

	_, err = store.NewListConfig(store.Prefix("a."))
	require.IsType(t, &store.InvalidNamespaceError{}, err)
}

func TestListConfigApply(t *testing.T) {
	cfg, err := store.NewListConfig(store.MaxDepth(2), store.Offset(1), store.Limit(2))
	require.NoError(t, err)
	in := [][]string{{"b", "x", "1"}, {"a"}, {"b", "x"}, {"a", "z", "q"}, {"c"}}
	got := cfg.Apply(in)
	require.Equal(t, [][]string{{"a", "z"}, {"b", "x"}}, got)
	got[0][0] = "changed"
	require.Equal(t, "a", in[3][0], "Apply shares no memory with its input")
}

func TestPutConfig(t *testing.T) {
	cfg, err := store.NewPutConfig(store.WithTTL(time.Minute))
	require.NoError(t, err)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, now.Add(time.Minute), cfg.ExpiresAt(now))
	cfg, err = store.NewPutConfig()
	require.NoError(t, err)
	require.True(t, cfg.ExpiresAt(now).IsZero())
	_, err = store.NewPutConfig(store.WithTTL(-1))
	require.ErrorIs(t, err, store.ErrInvalidOption)
}

func TestMarshalValue(t *testing.T) {
	b, err := store.MarshalValue(map[string]any{"html": "<a&b>", "n": 1})
	require.NoError(t, err)
	require.Equal(t, `{"html":"<a&b>","n":1}`, string(b))
	b, err = store.MarshalValue(nil)
	require.NoError(t, err)
	require.Equal(t, `{}`, string(b))
	_, err = store.UnmarshalValue([]byte(`[1]`))
	require.Error(t, err)
	_, err = store.UnmarshalValue([]byte(`null`))
	require.Error(t, err)
}

func TestWithJSONNormalizesText(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"whitespace", "{ \"b\" : 1 ,\n\t\"a\" : [ 1 , { \"y\" : 2 , \"x\" : 3 } ] }", `{"b":1,"a":[1,{"y":2,"x":3}]}`},
		{"a repeated key keeps its first place and last value", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"a repeated key nested", `{"o":{"k":[1],"j":0,"k":{"z":1}}}`, `{"o":{"k":{"z":1},"j":0}}`},
		{"numbers spelled as given", `{"n":[1.0,1E2,-0,0.5e-3,12345678901234567890]}`, `{"n":[1.0,1E2,-0,0.5e-3,12345678901234567890]}`},
		{"strings re-escaped", `{"s":"\u00e9\/<&>\u2028\t\u0001"}`, "{\"s\":\"é/<&>\\u2028\\t\\u0001\"}"},
		{"invalid UTF-8", "{\"s\":\"a\xffb\"}", "{\"s\":\"a\uFFFDb\"}"},
		{"empty containers", `{"o":{},"a":[]}`, `{"o":{},"a":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := store.NewPutConfig(store.WithJSON([]byte(tt.text)))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(cfg.JSON))
		})
	}
}

func TestWithJSONKeepsNoReferenceToTheCallersText(t *testing.T) {
	text := []byte(`{"a":1}`)
	opt := store.WithJSON(text)
	text[2] = 'b'
	cfg, err := store.NewPutConfig(opt)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(cfg.JSON))
}

func TestWithJSONRejectsTextsThatAreNotObjects(t *testing.T) {
	for _, text := range []string{``, ` `, `[]`, `"x"`, `1`, `null`, `{`, `{"a":}`, `{"a":1}x`, `{"a":1}{}`, `{'a':1}`} {
		_, err := store.NewPutConfig(store.WithJSON([]byte(text)))
		require.ErrorIs(t, err, store.ErrInvalidOption, "%q", text)
	}
}

func TestEncodeChecksTheTextAgainstTheValue(t *testing.T) {
	tests := []struct {
		name  string
		value map[string]any
		text  string
		ok    bool
	}{
		{"equal", map[string]any{"a": 1, "b": "x"}, `{"b":"x","a":1}`, true},
		{"numbers by value", map[string]any{"a": int64(1), "f": float32(0.5)}, `{"f":5e-1,"a":1.0}`, true},
		{"nil value, empty text", nil, `{}`, true},
		{"a repeated key decodes to its last value", map[string]any{"a": 2}, `{"a":1,"a":2}`, true},
		{"a repeated key's first value is not the value", map[string]any{"a": 1}, `{"a":1,"a":2}`, false},
		{"another value", map[string]any{"a": 1}, `{"a":2}`, false},
		{"a missing key", map[string]any{"a": 1, "b": nil}, `{"a":1}`, false},
		{"another type", map[string]any{"a": true}, `{"a":1}`, false},
		{"a number out of range", map[string]any{}, `{"a":1e999}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := store.NewPutConfig(store.WithJSON([]byte(tt.text)))
			if err != nil {
				require.False(t, tt.ok)
				require.ErrorIs(t, err, store.ErrInvalidOption)
				return
			}
			raw, decoded, err := cfg.Encode(tt.value)
			if !tt.ok {
				require.ErrorIs(t, err, store.ErrInvalidOption)
				return
			}
			require.NoError(t, err)
			require.Equal(t, string(cfg.JSON), string(raw))
			want, err := store.UnmarshalValue(raw)
			require.NoError(t, err)
			require.Equal(t, want, decoded)
		})
	}
}

func TestEncodeWithoutTextMarshalsTheValue(t *testing.T) {
	cfg, err := store.NewPutConfig()
	require.NoError(t, err)
	raw, decoded, err := cfg.Encode(map[string]any{"b": 1, "a": 2})
	require.NoError(t, err)
	require.Equal(t, `{"a":2,"b":1}`, string(raw))
	require.Equal(t, map[string]any{"a": 2.0, "b": 1.0}, decoded)
}
