package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/store"
)

// Run tests a [store.Store] against the promises of its contract, one
// subtest per promise.
//
// newStore is called once per subtest. It must return a store that holds
// no items and is not shared with any other subtest (subtests list every
// namespace the store holds), and release it with t.Cleanup. If the store
// implements [store.ClockSetter], Run sets its clock before using it (see
// the package documentation).
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("promise: %s", c.explanation)
				}
			})
			s := newStore(t)
			e := &env{t: t, ctx: t.Context(), s: s}
			if cs, ok := s.(store.ClockSetter); ok {
				e.clock = &clock{now: start}
				cs.SetClock(e.clock.Now)
			} else if c.needsClock {
				t.Skip("the store does not implement store.ClockSetter; this subtest needs a clock the suite controls")
			}
			if sw, ok := s.(store.Sweeper); ok {
				e.sweeper = sw
			} else if c.needsSweeper {
				t.Skip("the store does not implement store.Sweeper")
			}
			c.run(e)
		})
	}
}

type testCase struct {
	// name names the subtest.
	name string
	// explanation states the promise the case checks.
	explanation string
	// needsClock skips the case for stores that are not ClockSetters.
	needsClock bool
	// needsSweeper skips the case for stores that are not Sweepers.
	needsSweeper bool
	run          func(e *env)
}

var cases = []testCase{
	{
		name:        "put-get",
		explanation: "Get returns what Put stored: namespace, key, value, CreatedAt = UpdatedAt = the time of the Put, and a zero ExpiresAt without a TTL",
		run: func(e *env) {
			ns := []string{"users", "u1"}
			e.put(ns, "prefs", obj(`{"theme":"dark","size":12}`))
			e.requireItem(e.item(ns, "prefs", `{"theme":"dark","size":12}`), e.get(ns, "prefs"))
		},
	},
	{
		name:        "get-missing",
		explanation: "Get of a key or namespace holding no item returns nil and no error, also for the parent and child namespaces of an item",
		run: func(e *env) {
			e.put([]string{"a", "b"}, "k", obj(`{"x":1}`))
			for _, q := range []struct {
				ns  []string
				key string
			}{
				{[]string{"a", "b"}, "other"},
				{[]string{"a"}, "k"},
				{[]string{"a", "b", "c"}, "k"},
				{[]string{"b"}, "k"},
				{[]string{"nothing", "here"}, ""},
			} {
				got, err := e.s.Get(e.ctx, q.ns, q.key)
				require.NoError(e.t, err, "Get(%q, %q)", q.ns, q.key)
				require.Nil(e.t, got, "Get(%q, %q)", q.ns, q.key)
			}
		},
	},
	{
		name:        "values-round-trip-as-json",
		explanation: "a value reads back as its JSON encoding decodes into a map[string]any: nested objects and arrays, numbers as float64, bools, null, escaped and non-ASCII strings, Go structs and typed slices as JSON; a nil value as an empty object",
		run: func(e *env) {
			ns := []string{"values"}
			type point struct {
				X int    `json:"x"`
				Y string `json:"y,omitempty"`
			}
			tests := []struct {
				key   string
				value map[string]any
				want  string
			}{
				{"nested", obj(`{"a":{"b":{"c":[1,[2,[3]],{"d":null}]}},"e":[]}`), `{"a":{"b":{"c":[1,[2,[3]],{"d":null}]}},"e":[]}`},
				{"numbers", map[string]any{"i": 42, "neg": -7, "f": 1.5, "small": 1e-9, "big": 1e21, "i64": int64(1) << 53, "u8": uint8(200), "zero": 0.0}, `{"i":42,"neg":-7,"f":1.5,"small":1e-9,"big":1e21,"i64":9007199254740992,"u8":200,"zero":0}`},
				{"scalars", map[string]any{"t": true, "f": false, "n": nil, "s": "", "u": "žluťoučký 🐴 日本"}, `{"t":true,"f":false,"n":null,"s":"","u":"žluťoučký 🐴 日本"}`},
				{"escapes", map[string]any{"s": "quote\" backslash\\ nl\n tab\t html<&> \u2028 \x01"}, `{"s":"quote\" backslash\\ nl\n tab\t html<&> \u2028 \u0001"}`},
				{"go-types", map[string]any{"p": point{X: 3}, "ps": []point{{1, "a"}}, "strs": []string{"x", "y"}, "m": map[string]int{"k": 1}}, `{"p":{"x":3},"ps":[{"x":1,"y":"a"}],"strs":["x","y"],"m":{"k":1}}`},
				{"empty", map[string]any{}, `{}`},
				{"nil", nil, `{}`},
			}
			for _, tt := range tests {
				e.put(ns, tt.key, tt.value)
			}
			for _, tt := range tests {
				got := e.get(ns, tt.key)
				require.NotNil(e.t, got, tt.key)
				e.requireValue(obj(tt.want), got.Value, tt.key)
				require.NotNil(e.t, got.Value, tt.key)
			}
		},
	},
	{
		name:        "values-are-copies",
		explanation: "Put keeps its own copy of the value and every read returns a fresh copy: changing the map given to Put or a map returned by Get or Search changes nothing stored",
		run: func(e *env) {
			ns := []string{"copies"}
			v := obj(`{"list":[1,2],"inner":{"a":1}}`)
			e.put(ns, "k", v)
			v["list"] = "changed"
			v["inner"].(map[string]any)["a"] = 2
			got := e.get(ns, "k")
			got.Value["list"] = "changed too"
			got.Value["inner"].(map[string]any)["a"] = 3
			got.Namespace[0] = "mutated"
			found := e.search(ns)
			require.Len(e.t, found, 1)
			found[0].Value["new"] = true
			e.requireValue(obj(`{"list":[1,2],"inner":{"a":1}}`), e.get(ns, "k").Value, "after mutations")
			require.Equal(e.t, ns, e.get(ns, "k").Namespace)
		},
	},
	{
		name:        "put-unencodable-value-fails",
		explanation: "Put of a value that does not encode as JSON (a channel, NaN) returns an error and stores nothing",
		run: func(e *env) {
			ns := []string{"bad"}
			for key, v := range map[string]map[string]any{
				"chan": {"c": make(chan int)},
				"nan":  {"f": math.NaN()},
				"inf":  {"f": math.Inf(1)},
				"func": {"f": func() {}},
			} {
				require.Error(e.t, e.s.Put(e.ctx, ns, key, v), key)
				require.Nil(e.t, e.get(ns, key), key)
			}
			require.Empty(e.t, e.list())
		},
	},
	{
		name:        "overwrite",
		needsClock:  true,
		explanation: "Put over an existing item replaces its value as a whole (no merge), keeps CreatedAt and sets UpdatedAt to the time of the new Put",
		run: func(e *env) {
			ns := []string{"users", "u1"}
			e.put(ns, "prefs", obj(`{"theme":"dark","size":12}`))
			created := e.clock.Now()
			e.advance(time.Minute)
			e.put(ns, "prefs", obj(`{"theme":"light"}`))
			want := e.item(ns, "prefs", `{"theme":"light"}`)
			want.CreatedAt = created
			e.requireItem(want, e.get(ns, "prefs"))
		},
	},
	{
		name:        "delete",
		explanation: "Delete removes one item: Get returns nil, Search and ListNamespaces no longer see it, other items stay; deleting a missing item is not an error; an item put again after a delete is new (CreatedAt is the time of the new Put)",
		run: func(e *env) {
			a, b := []string{"d", "a"}, []string{"d", "b"}
			e.put(a, "k1", obj(`{"n":1}`))
			e.put(a, "k2", obj(`{"n":2}`))
			e.put(b, "k1", obj(`{"n":3}`))
			require.NoError(e.t, e.s.Delete(e.ctx, a, "k1"))
			require.Nil(e.t, e.get(a, "k1"))
			require.NotNil(e.t, e.get(a, "k2"))
			require.NotNil(e.t, e.get(b, "k1"))
			require.ElementsMatch(e.t, []string{"d.a/k2", "d.b/k1"}, e.ids(e.search([]string{"d"})))
			require.NoError(e.t, e.s.Delete(e.ctx, a, "k1"), "deleting again")
			require.NoError(e.t, e.s.Delete(e.ctx, []string{"never", "used"}, "k"), "deleting from an unknown namespace")
			require.NoError(e.t, e.s.Delete(e.ctx, b, "k1"))
			require.Equal(e.t, [][]string{a}, e.list(), "a namespace without items is not listed")
			if e.clock != nil {
				e.advance(time.Second)
				e.put(b, "k1", obj(`{"n":4}`))
				e.requireItem(e.item(b, "k1", `{"n":4}`), e.get(b, "k1"))
			}
		},
	},
	{
		name:        "namespaces-isolated",
		explanation: "the same key in different namespaces names different items, and a search prefix matches whole labels: (\"a\") covers (\"a\", \"b\") but not (\"ab\"), and labels with SQL wildcards (\"user_1\", \"100%\") match only themselves",
		run: func(e *env) {
			nss := [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"ab"}, {"b"}, {"b", "a"}, {"user_1"}, {"userX1"}, {"100%"}, {"1000"}, {"a-b"}, {"a\\"}}
			for i, ns := range nss {
				e.put(ns, "k", map[string]any{"i": i})
			}
			for i, ns := range nss {
				got := e.get(ns, "k")
				require.NotNil(e.t, got, "%q", ns)
				e.requireValue(map[string]any{"i": float64(i)}, got.Value, fmt.Sprintf("%q", ns))
			}
			ids := func(prefix ...string) []string { return e.ids(e.search(prefix, store.Limit(100))) }
			require.ElementsMatch(e.t, []string{"a/k", "a.b/k", "a.b.c/k"}, ids("a"))
			require.ElementsMatch(e.t, []string{"a.b/k", "a.b.c/k"}, ids("a", "b"))
			require.ElementsMatch(e.t, []string{"ab/k"}, ids("ab"))
			require.ElementsMatch(e.t, []string{"b/k", "b.a/k"}, ids("b"))
			require.ElementsMatch(e.t, []string{"user_1/k"}, ids("user_1"))
			require.ElementsMatch(e.t, []string{"100%/k"}, ids("100%"))
			require.ElementsMatch(e.t, []string{"a\\/k"}, ids("a\\"))
			require.Empty(e.t, ids("a", "b", "c", "d"))
		},
	},
	{
		name:        "invalid-namespaces",
		explanation: "Put, Get and Delete reject an empty namespace, empty labels, labels containing \".\" and the reserved first label \"agentgraph\" with a *store.InvalidNamespaceError naming the namespace; search prefixes and list patterns reject empty labels and labels with \".\"; nothing is stored",
		run: func(e *env) {
			bad := [][]string{nil, {}, {""}, {"a", ""}, {"", "a"}, {"a.b"}, {"a", "b.c"}, {"."}, {store.ReservedLabel}, {store.ReservedLabel, "x"}}
			for _, ns := range bad {
				e.requireInvalidNamespace(ns, e.s.Put(e.ctx, ns, "k", obj(`{"a":1}`)), "Put(%q)", ns)
				got, err := e.s.Get(e.ctx, ns, "k")
				e.requireInvalidNamespace(ns, err, "Get(%q)", ns)
				require.Nil(e.t, got)
				e.requireInvalidNamespace(ns, e.s.Delete(e.ctx, ns, "k"), "Delete(%q)", ns)
			}
			good := [][]string{{"x", store.ReservedLabel}, {"Agentgraph"}, {"langgraph"}, {"*"}, {"a b"}, {"a,b"}}
			for _, ns := range good {
				require.NoError(e.t, e.s.Put(e.ctx, ns, "k", obj(`{"a":1}`)), "Put(%q)", ns)
			}
			for _, prefix := range [][]string{{""}, {"a.b"}, {"x", ""}} {
				_, err := e.s.Search(e.ctx, prefix)
				e.requireInvalidNamespace(prefix, err, "Search(%q)", prefix)
				_, err = e.s.ListNamespaces(e.ctx, store.Prefix(prefix...))
				e.requireInvalidNamespace(prefix, err, "ListNamespaces(Prefix(%q))", prefix)
				_, err = e.s.ListNamespaces(e.ctx, store.Suffix(prefix...))
				e.requireInvalidNamespace(prefix, err, "ListNamespaces(Suffix(%q))", prefix)
			}
			require.Empty(e.t, e.search([]string{store.ReservedLabel}), "a search under the reserved label is valid and finds nothing")
			want := slices.Clone(good)
			slices.SortFunc(want, slices.Compare)
			require.Equal(e.t, want, e.list())
		},
	},
	{
		name:        "search-prefix",
		explanation: "Search returns the items of the namespaces that start with the prefix, all items for an empty or nil prefix, and none for a prefix no namespace starts with",
		run: func(e *env) {
			e.put([]string{"docs"}, "readme", obj(`{}`))
			e.put([]string{"docs", "a"}, "1", obj(`{}`))
			e.put([]string{"docs", "a"}, "2", obj(`{}`))
			e.put([]string{"docs", "b", "deep"}, "3", obj(`{}`))
			e.put([]string{"other"}, "4", obj(`{}`))
			all := []string{"docs/readme", "docs.a/1", "docs.a/2", "docs.b.deep/3", "other/4"}
			require.ElementsMatch(e.t, all, e.ids(e.search(nil)))
			require.ElementsMatch(e.t, all, e.ids(e.search([]string{})))
			require.ElementsMatch(e.t, all[:4], e.ids(e.search([]string{"docs"})))
			require.ElementsMatch(e.t, all[1:3], e.ids(e.search([]string{"docs", "a"})))
			require.ElementsMatch(e.t, all[3:4], e.ids(e.search([]string{"docs", "b"})))
			require.Empty(e.t, e.search([]string{"doc"}))
			require.Empty(e.t, e.search([]string{"docs", "a", "1"}))
			require.Empty(e.t, e.search([]string{"nope"}))
		},
	},
	{
		name:        "search-filter-equality",
		explanation: "a filter entry keeps items whose value has that top-level key with a JSON-equal value: numbers by value whatever their Go type, bools never equal to numbers, strings never equal to numbers, objects and arrays equal as a whole (not by containment), null only where the key holds null; several entries and several Filter options must all hold",
		run: func(e *env) {
			ns := []string{"f"}
			for _, kv := range [][2]string{
				{"a", `{"kind":"note","n":1,"flag":true,"tags":["x","y"],"obj":{"a":1,"b":[1,2]},"nil":null,"s":"1"}`},
				{"b", `{"kind":"note","n":2.5,"flag":false,"tags":["x"],"obj":{"a":1},"s":"2"}`},
				{"c", `{"kind":"todo","n":1.0,"flag":1,"tags":[],"nil":"x"}`},
				{"d", `{"kind":"todo","n":"1"}`},
				{"e", `{}`},
			} {
				e.put(ns, kv[0], obj(kv[1]))
				e.advance(time.Second)
			}
			tests := []struct {
				filters []map[string]any
				want    []string // newest first
			}{
				{[]map[string]any{{}}, []string{"e", "d", "c", "b", "a"}},
				{[]map[string]any{{"kind": "note"}}, []string{"b", "a"}},
				{[]map[string]any{{"kind": "todo"}}, []string{"d", "c"}},
				{[]map[string]any{{"kind": "nope"}}, nil},
				{[]map[string]any{{"n": 1}}, []string{"c", "a"}},
				{[]map[string]any{{"n": 1.0}}, []string{"c", "a"}},
				{[]map[string]any{{"n": int64(1)}}, []string{"c", "a"}},
				{[]map[string]any{{"n": uint8(1)}}, []string{"c", "a"}},
				{[]map[string]any{{"n": 2.5}}, []string{"b"}},
				{[]map[string]any{{"n": "1"}}, []string{"d"}},
				{[]map[string]any{{"s": 1}}, nil},
				{[]map[string]any{{"flag": true}}, []string{"a"}},
				{[]map[string]any{{"flag": false}}, []string{"b"}},
				{[]map[string]any{{"flag": 1}}, []string{"c"}},
				{[]map[string]any{{"tags": []string{"x", "y"}}}, []string{"a"}},
				{[]map[string]any{{"tags": []any{"y", "x"}}}, nil},
				{[]map[string]any{{"tags": []string{"x"}}}, []string{"b"}},
				{[]map[string]any{{"tags": []any{}}}, []string{"c"}},
				{[]map[string]any{{"obj": map[string]any{"a": 1}}}, []string{"b"}},
				{[]map[string]any{{"obj": map[string]any{"b": []int{1, 2}, "a": 1.0}}}, []string{"a"}},
				{[]map[string]any{{"obj": struct {
					A int `json:"a"`
				}{1}}}, []string{"b"}},
				{[]map[string]any{{"nil": nil}}, []string{"a"}},
				{[]map[string]any{{"missing": nil}}, nil},
				{[]map[string]any{{"missing": "x"}}, nil},
				{[]map[string]any{{"kind": "note", "n": 1}}, []string{"a"}},
				{[]map[string]any{{"kind": "note", "n": "1"}}, nil},
				{[]map[string]any{{"kind": "todo"}, {"n": "1"}}, []string{"d"}},
				{[]map[string]any{{"kind": "todo"}, {"kind": "note"}}, nil},
			}
			for _, tt := range tests {
				var opts []store.SearchOption
				for _, f := range tt.filters {
					opts = append(opts, store.Filter(f))
				}
				e.requireKeys(tt.want, e.search(ns, opts...), "filters %v", tt.filters)
			}
		},
	},
	{
		name:        "search-filter-operators",
		explanation: "$eq and $ne compare as JSON equality ($ne needs the key to be present); $gt, $gte, $lt and $lte compare numbers by value and strings bytewise, never a number with a string, a bool or null; several operators on one key must all hold",
		run: func(e *env) {
			ns := []string{"ops"}
			for i, v := range []string{
				`{"score":1,"name":"alice"}`,
				`{"score":2,"name":"bob"}`,
				`{"score":3,"name":"carol"}`,
				`{"score":4.5,"name":"Zed"}`,
				`{"score":"3"}`,
				`{"score":true}`,
				`{"other":1}`,
				`{"score":null}`,
				`{"meta":{"a":1},"name":"ärger"}`,
			} {
				e.put(ns, fmt.Sprintf("k%d", i+1), obj(v))
				e.advance(time.Second)
			}
			op := func(key string, ops ...any) map[string]any {
				m := map[string]any{}
				for i := 0; i < len(ops); i += 2 {
					m[ops[i].(string)] = ops[i+1]
				}
				return map[string]any{key: m}
			}
			tests := []struct {
				filter map[string]any
				want   []string // newest first
			}{
				{op("score", "$eq", 3), []string{"k3"}},
				{op("score", "$eq", "3"), []string{"k5"}},
				{op("score", "$eq", true), []string{"k6"}},
				{op("score", "$eq", nil), []string{"k8"}},
				{op("score", "$ne", 3), []string{"k8", "k6", "k5", "k4", "k2", "k1"}},
				{op("score", "$ne", nil), []string{"k6", "k5", "k4", "k3", "k2", "k1"}},
				{op("score", "$gt", 2), []string{"k4", "k3"}},
				{op("score", "$gt", int64(2)), []string{"k4", "k3"}},
				{op("score", "$gte", 2), []string{"k4", "k3", "k2"}},
				{op("score", "$lt", 2), []string{"k1"}},
				{op("score", "$lte", 2), []string{"k2", "k1"}},
				{op("score", "$gt", 1.5), []string{"k4", "k3", "k2"}},
				{op("score", "$gte", 4.5), []string{"k4"}},
				{op("score", "$gt", 4.5), nil},
				{op("score", "$lt", 100), []string{"k4", "k3", "k2", "k1"}},
				{op("score", "$gte", 2, "$lt", 4), []string{"k3", "k2"}},
				{op("score", "$gt", 3, "$lt", 3), nil},
				{op("score", "$eq", 3, "$gte", 3), []string{"k3"}},
				{op("score", "$gt", "2"), []string{"k5"}},
				{op("score", "$lt", "3"), nil},
				{op("score", "$lte", "3"), []string{"k5"}},
				{op("name", "$gt", "bob"), []string{"k9", "k3"}},
				{op("name", "$gte", "bob"), []string{"k9", "k3", "k2"}},
				{op("name", "$lt", "b"), []string{"k4", "k1"}},
				{op("name", "$lte", "alice"), []string{"k4", "k1"}},
				{op("name", "$gt", "z"), []string{"k9"}},
				{op("name", "$ne", "bob"), []string{"k9", "k4", "k3", "k1"}},
				{op("meta", "$eq", map[string]any{"a": 1}), []string{"k9"}},
				{op("meta", "$ne", map[string]any{"a": 1}), nil},
				{op("meta", "$ne", map[string]any{"a": 2}), []string{"k9"}},
				{op("missing", "$ne", 1), nil},
				{op("missing", "$lt", 1), nil},
				{map[string]any{"score": map[string]any{"$gt": 1}, "name": map[string]any{"$ne": "bob"}}, []string{"k4", "k3"}},
				{map[string]any{"score": map[string]any{"$lt": 4}, "name": "bob"}, []string{"k2"}},
			}
			for _, tt := range tests {
				e.requireKeys(tt.want, e.search(ns, store.Filter(tt.filter)), "filter %v", tt.filter)
			}
		},
	},
	{
		name:        "search-invalid-options",
		explanation: "Search fails with an error wrapping store.ErrInvalidOption for an unknown operator, an operator object with other keys, an ordering operator whose operand is not a number or a string, a filter value that is not JSON, and a negative limit or offset",
		run: func(e *env) {
			e.put([]string{"x"}, "k", obj(`{"a":1}`))
			for _, opt := range []store.SearchOption{
				store.Filter(map[string]any{"a": map[string]any{"$regex": "x"}}),
				store.Filter(map[string]any{"a": map[string]any{"$in": []any{1}}}),
				store.Filter(map[string]any{"a": map[string]any{"$gt": 1, "b": 2}}),
				store.Filter(map[string]any{"a": map[string]any{"$gt": true}}),
				store.Filter(map[string]any{"a": map[string]any{"$gte": nil}}),
				store.Filter(map[string]any{"a": map[string]any{"$lt": []any{1}}}),
				store.Filter(map[string]any{"a": map[string]any{"$lte": map[string]any{"b": 1}}}),
				store.Filter(map[string]any{"a": make(chan int)}),
				store.Limit(-1),
				store.Offset(-1),
			} {
				_, err := e.s.Search(e.ctx, []string{"x"}, opt)
				require.ErrorIs(e.t, err, store.ErrInvalidOption, "option %#v", opt)
			}
		},
	},
	{
		name:        "search-limit-offset",
		explanation: "Search returns at most 10 items by default and at most Limit otherwise, after skipping Offset matching items: successive pages add up to the full result, in order; Limit(0) and an offset past the end return nothing; with a filter, offset and limit count matching items",
		run: func(e *env) {
			ns := []string{"page"}
			for i := range 25 {
				e.put(ns, fmt.Sprintf("k%02d", i), map[string]any{"even": i%2 == 0, "i": i})
				e.advance(time.Second)
			}
			all := e.ids(e.search(ns, store.Limit(100)))
			require.Len(e.t, all, 25)
			require.Len(e.t, e.search(ns), store.DefaultSearchLimit)
			require.Equal(e.t, all[:10], e.ids(e.search(ns)), "the default page is the first page")
			var pages []string
			for off := 0; off < 30; off += 7 {
				pages = append(pages, e.ids(e.search(ns, store.Limit(7), store.Offset(off)))...)
			}
			require.Equal(e.t, all, pages)
			require.Equal(e.t, all[20:], e.ids(e.search(ns, store.Offset(20))))
			require.Empty(e.t, e.search(ns, store.Offset(25)))
			require.Empty(e.t, e.search(ns, store.Offset(1000)))
			require.Empty(e.t, e.search(ns, store.Limit(0)))

			even := e.ids(e.search(ns, store.Filter(map[string]any{"even": true}), store.Limit(100)))
			require.Len(e.t, even, 13)
			require.Equal(e.t, even[4:9], e.ids(e.search(ns, store.Filter(map[string]any{"even": true}), store.Offset(4), store.Limit(5))))
			require.Equal(e.t, even[10:], e.ids(e.search(ns, store.Filter(map[string]any{"even": true}), store.Offset(10))))
			if e.clock != nil {
				var want []string
				for i := 24; i >= 0; i-- {
					want = append(want, fmt.Sprintf("page/k%02d", i))
				}
				require.Equal(e.t, want, all)
			}
		},
	},
	{
		name:        "search-order",
		needsClock:  true,
		explanation: "Search orders items by UpdatedAt, newest first; putting an item again moves it to the front; items updated at the same time are ordered by namespace (labels joined with \".\") and then key, bytewise",
		run: func(e *env) {
			ns := []string{"order"}
			for _, k := range []string{"k3", "k1", "k5", "k2", "k4"} {
				e.put(ns, k, obj(`{}`))
				e.advance(time.Second)
			}
			e.requireKeys([]string{"k4", "k2", "k5", "k1", "k3"}, e.search(ns))
			e.put(ns, "k1", obj(`{"again":true}`))
			e.requireKeys([]string{"k1", "k4", "k2", "k5", "k3"}, e.search(ns))

			e.advance(time.Hour)
			for _, id := range [][]string{{"t", "b"}, {"t", "a", "z"}, {"t", "a"}, {"t", "a-b"}} {
				e.put(id, "y", obj(`{}`))
				e.put(id, "x", obj(`{}`))
			}
			require.Equal(e.t, []string{"t.a/x", "t.a/y", "t.a-b/x", "t.a-b/y", "t.a.z/x", "t.a.z/y", "t.b/x", "t.b/y"},
				e.ids(e.search([]string{"t"}, store.Limit(100))))
		},
	},
	{
		name:        "list-namespaces",
		explanation: "ListNamespaces returns each namespace holding items once, sorted label by label (a namespace before those it is a prefix of), filtered by Prefix and Suffix patterns where \"*\" matches any one label, truncated to MaxDepth and de-duplicated, then paged with Offset and Limit",
		run: func(e *env) {
			nss := [][]string{
				{"a", "b", "c"}, {"a", "b", "d", "e"}, {"a", "b", "d", "i"}, {"a", "b", "f"}, {"a", "c", "f"},
				{"b", "a", "f"}, {"users", "1", "memories"}, {"users", "2", "memories"}, {"users", "2", "prefs"},
				{"x"}, {"a-b"},
			}
			for i, ns := range nss {
				e.put(ns, "k1", map[string]any{"i": i})
				e.put(ns, "k2", map[string]any{"i": i})
			}
			n := func(labels ...string) []string { return labels }
			all := [][]string{
				n("a", "b", "c"), n("a", "b", "d", "e"), n("a", "b", "d", "i"), n("a", "b", "f"), n("a", "c", "f"),
				n("a-b"), n("b", "a", "f"), n("users", "1", "memories"), n("users", "2", "memories"), n("users", "2", "prefs"), n("x"),
			}
			tests := []struct {
				opts []store.ListOption
				want [][]string
			}{
				{nil, all},
				{[]store.ListOption{store.Prefix()}, all},
				{[]store.ListOption{store.Prefix("a", "b"), store.MaxDepth(3)}, [][]string{n("a", "b", "c"), n("a", "b", "d"), n("a", "b", "f")}},
				{[]store.ListOption{store.Prefix("a")}, all[:5]},
				{[]store.ListOption{store.Prefix("a", "b", "c")}, [][]string{n("a", "b", "c")}},
				{[]store.ListOption{store.Prefix("a", "b", "c", "d")}, nil},
				{[]store.ListOption{store.Prefix("zzz")}, nil},
				{[]store.ListOption{store.Prefix("users", "*", "memories")}, [][]string{n("users", "1", "memories"), n("users", "2", "memories")}},
				{[]store.ListOption{store.Prefix("*", "b")}, all[:4]},
				{[]store.ListOption{store.Prefix("*")}, all},
				{[]store.ListOption{store.Prefix("*", "*", "*", "*")}, [][]string{n("a", "b", "d", "e"), n("a", "b", "d", "i")}},
				{[]store.ListOption{store.Suffix("f")}, [][]string{n("a", "b", "f"), n("a", "c", "f"), n("b", "a", "f")}},
				{[]store.ListOption{store.Suffix("*", "f")}, [][]string{n("a", "b", "f"), n("a", "c", "f"), n("b", "a", "f")}},
				{[]store.ListOption{store.Suffix("c", "f")}, [][]string{n("a", "c", "f")}},
				{[]store.ListOption{store.Suffix("b", "*", "*")}, [][]string{n("a", "b", "d", "e"), n("a", "b", "d", "i"), n("b", "a", "f")}},
				{[]store.ListOption{store.Suffix("x")}, [][]string{n("x")}},
				{[]store.ListOption{store.Suffix("memories")}, [][]string{n("users", "1", "memories"), n("users", "2", "memories")}},
				{[]store.ListOption{store.Prefix("a"), store.Suffix("f")}, [][]string{n("a", "b", "f"), n("a", "c", "f")}},
				{[]store.ListOption{store.Prefix("users", "2"), store.Suffix("prefs")}, [][]string{n("users", "2", "prefs")}},
				{[]store.ListOption{store.MaxDepth(1)}, [][]string{n("a"), n("a-b"), n("b"), n("users"), n("x")}},
				{[]store.ListOption{store.MaxDepth(2)}, [][]string{n("a", "b"), n("a", "c"), n("a-b"), n("b", "a"), n("users", "1"), n("users", "2"), n("x")}},
				{[]store.ListOption{store.MaxDepth(10)}, all},
				{[]store.ListOption{store.Suffix("f"), store.MaxDepth(2)}, [][]string{n("a", "b"), n("a", "c"), n("b", "a")}},
				{[]store.ListOption{store.Limit(3)}, all[:3]},
				{[]store.ListOption{store.Offset(3), store.Limit(3)}, all[3:6]},
				{[]store.ListOption{store.Offset(9)}, all[9:]},
				{[]store.ListOption{store.Offset(11)}, nil},
				{[]store.ListOption{store.Limit(0)}, nil},
				{[]store.ListOption{store.MaxDepth(2), store.Offset(1), store.Limit(2)}, [][]string{n("a", "c"), n("a-b")}},
				{[]store.ListOption{store.Prefix("a"), store.MaxDepth(2), store.Offset(1)}, [][]string{n("a", "c")}},
			}
			for _, tt := range tests {
				got, err := e.s.ListNamespaces(e.ctx, tt.opts...)
				require.NoError(e.t, err, "ListNamespaces(%s)", describe(tt.opts))
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
					e.t.Fatalf("ListNamespaces(%s) mismatch (-want +got):\n%s", describe(tt.opts), diff)
				}
			}
			for _, opt := range []store.ListOption{store.MaxDepth(0), store.MaxDepth(-1), store.Limit(-1), store.Offset(-1)} {
				_, err := e.s.ListNamespaces(e.ctx, opt)
				require.ErrorIs(e.t, err, store.ErrInvalidOption, "ListNamespaces(%s)", describe([]store.ListOption{opt}))
			}
		},
	},
	{
		name:        "list-namespaces-default-limit",
		explanation: "ListNamespaces returns at most 100 namespaces by default",
		run: func(e *env) {
			for i := range store.DefaultListLimit + 5 {
				e.put([]string{"n", fmt.Sprintf("%03d", i)}, "k", obj(`{}`))
			}
			got := e.list()
			require.Len(e.t, got, store.DefaultListLimit)
			require.Equal(e.t, []string{"n", "000"}, got[0])
			require.Equal(e.t, []string{"n", "099"}, got[99])
			require.Len(e.t, e.list(store.Limit(1000)), store.DefaultListLimit+5)
		},
	},
	{
		name:        "ttl-expiry",
		needsClock:  true,
		explanation: "an item put WithTTL(d) has ExpiresAt = put time + d and is absent for Get (refreshing or not), Search and ListNamespaces from that instant on, while items without a TTL stay; putting again under an expired item's key creates a new item",
		run: func(e *env) {
			a, b := []string{"ttl", "a"}, []string{"ttl", "b"}
			e.put(a, "k", obj(`{"v":1}`), store.WithTTL(time.Minute))
			e.put(b, "k", obj(`{"v":2}`))
			want := e.item(a, "k", `{"v":1}`)
			want.ExpiresAt = e.clock.Now().Add(time.Minute)
			e.requireItem(want, e.get(a, "k", store.RefreshTTL(false)))
			e.requireItem(e.item(b, "k", `{"v":2}`), e.get(b, "k"))

			e.advance(time.Minute - time.Second)
			e.requireItem(want, e.get(a, "k", store.RefreshTTL(false)))
			require.ElementsMatch(e.t, []string{"ttl.a/k", "ttl.b/k"}, e.ids(e.search([]string{"ttl"}, store.RefreshTTL(false))))
			require.Equal(e.t, [][]string{a, b}, e.list())

			e.advance(time.Second)
			require.Nil(e.t, e.get(a, "k", store.RefreshTTL(false)), "expired at ExpiresAt")
			require.Nil(e.t, e.get(a, "k"), "a refreshing read does not revive an expired item")
			require.Equal(e.t, []string{"ttl.b/k"}, e.ids(e.search([]string{"ttl"})))
			require.Empty(e.t, e.search(a, store.Filter(map[string]any{"v": 1})))
			require.Equal(e.t, [][]string{b}, e.list())
			require.NotNil(e.t, e.get(b, "k"))

			e.advance(time.Hour)
			e.put(a, "k", obj(`{"v":3}`))
			e.requireItem(e.item(a, "k", `{"v":3}`), e.get(a, "k"))
		},
	},
	{
		name:        "ttl-refresh-on-read",
		needsClock:  true,
		explanation: "Get and Search extend the TTL of the items they return to a full TTL from the read (and return the new ExpiresAt) unless given RefreshTTL(false); items Search filters out or pages past, and ListNamespaces, do not refresh",
		run: func(e *env) {
			ns := []string{"refresh"}
			t0 := e.clock.Now()
			e.put(ns, "get", obj(`{"keep":true}`), store.WithTTL(time.Minute))
			e.advance(40 * time.Second)
			got := e.get(ns, "get")
			require.True(e.t, got.ExpiresAt.Equal(t0.Add(100*time.Second)), "refreshed ExpiresAt: %v", got.ExpiresAt)
			e.advance(40 * time.Second) // t0+80s: would have expired at t0+60s
			got = e.get(ns, "get", store.RefreshTTL(false))
			require.NotNil(e.t, got, "kept alive by the refreshing Get")
			require.True(e.t, got.ExpiresAt.Equal(t0.Add(100*time.Second)), "RefreshTTL(false) leaves ExpiresAt: %v", got.ExpiresAt)
			e.advance(20 * time.Second) // t0+100s
			require.Nil(e.t, e.get(ns, "get"))

			s := []string{"search"}
			e.put(s, "match", obj(`{"keep":true}`), store.WithTTL(time.Minute))
			e.put(s, "filtered-out", obj(`{"keep":false}`), store.WithTTL(time.Minute))
			e.put(s, "norefresh", obj(`{"keep":true,"quiet":true}`), store.WithTTL(time.Minute))
			e.put(s, "paged-past", obj(`{"keep":true}`), store.WithTTL(time.Minute))
			e.advance(time.Second)
			e.put(s, "first", obj(`{"keep":true}`), store.WithTTL(time.Minute))
			e.advance(40 * time.Second)
			now := e.clock.Now()
			items := e.search(s, store.Filter(map[string]any{"keep": true}), store.Limit(2))
			require.Equal(e.t, []string{"search/first", "search/match"}, e.ids(items))
			for _, it := range items {
				require.True(e.t, it.ExpiresAt.Equal(now.Add(time.Minute)), "%s: ExpiresAt %v", it.Key, it.ExpiresAt)
			}
			quiet := e.search(s, store.Filter(map[string]any{"quiet": true}), store.RefreshTTL(false))
			require.Len(e.t, quiet, 1)
			require.True(e.t, quiet[0].ExpiresAt.Equal(now.Add(-41*time.Second+time.Minute)))
			require.Len(e.t, e.list(store.Prefix("search")), 1)
			e.advance(30 * time.Second)
			require.Equal(e.t, []string{"search/first", "search/match"}, e.ids(e.search(s, store.RefreshTTL(false), store.Limit(100))))
		},
	},
	{
		name:        "ttl-overwrite",
		needsClock:  true,
		explanation: "each Put sets the item's TTL anew: putting without WithTTL over an item with a TTL makes it permanent, putting WithTTL over a permanent item makes it expire; CreatedAt is kept as for any overwrite; WithTTL(0) means no TTL and a negative TTL fails with store.ErrInvalidOption",
		run: func(e *env) {
			ns := []string{"ow"}
			created := e.clock.Now()
			e.put(ns, "a", obj(`{"v":1}`), store.WithTTL(time.Minute))
			e.put(ns, "b", obj(`{"v":1}`))
			e.put(ns, "zero", obj(`{"v":1}`), store.WithTTL(0))
			e.advance(30 * time.Second)
			e.put(ns, "a", obj(`{"v":2}`))
			e.put(ns, "b", obj(`{"v":2}`), store.WithTTL(time.Minute))
			want := e.item(ns, "a", `{"v":2}`)
			want.CreatedAt = created
			e.requireItem(want, e.get(ns, "a"))
			want = e.item(ns, "b", `{"v":2}`)
			want.CreatedAt = created
			want.ExpiresAt = e.clock.Now().Add(time.Minute)
			e.requireItem(want, e.get(ns, "b", store.RefreshTTL(false)))
			e.advance(24 * time.Hour)
			require.NotNil(e.t, e.get(ns, "a"))
			require.NotNil(e.t, e.get(ns, "zero"))
			require.True(e.t, e.get(ns, "zero").ExpiresAt.IsZero())
			require.Nil(e.t, e.get(ns, "b"))
			err := e.s.Put(e.ctx, ns, "neg", obj(`{}`), store.WithTTL(-time.Second))
			require.ErrorIs(e.t, err, store.ErrInvalidOption)
			require.Nil(e.t, e.get(ns, "neg"))
		},
	},
	{
		name:         "sweep",
		needsClock:   true,
		needsSweeper: true,
		explanation:  "Sweep deletes exactly the items whose ExpiresAt has come and returns how many; it leaves live items and items without a TTL",
		run: func(e *env) {
			ns := []string{"sweep"}
			for i := range 3 {
				e.put(ns, fmt.Sprintf("minute%d", i), obj(`{}`), store.WithTTL(time.Minute))
			}
			for i := range 2 {
				e.put(ns, fmt.Sprintf("hour%d", i), obj(`{}`), store.WithTTL(time.Hour))
			}
			e.put(ns, "forever", obj(`{}`))
			e.put([]string{"other"}, "forever", obj(`{}`))
			require.Equal(e.t, 0, e.sweep())
			e.advance(time.Minute)
			require.Equal(e.t, 3, e.sweep())
			require.Equal(e.t, 0, e.sweep())
			require.ElementsMatch(e.t, []string{"sweep/hour0", "sweep/hour1", "sweep/forever"}, e.ids(e.search(ns, store.RefreshTTL(false))))
			e.advance(time.Hour)
			require.Equal(e.t, 2, e.sweep())
			require.ElementsMatch(e.t, []string{"other/forever", "sweep/forever"}, e.ids(e.search(nil)))
		},
	},
	{
		name:        "concurrent-writers",
		explanation: "many goroutines putting, reading, searching and deleting at once each see their own writes, and every write lands",
		run: func(e *env) {
			const writers, steps = 8, 10
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for w := range writers {
				wg.Go(func() { errs[w] = concurrentWriter(e.ctx, e.s, w, steps) })
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(e.t, err)
			}
			for w := range writers {
				ns := []string{"conc", fmt.Sprint(w)}
				for i := range steps {
					got := e.get(ns, fmt.Sprint(i))
					require.NotNil(e.t, got, "writer %d step %d", w, i)
					e.requireValue(map[string]any{"w": float64(w), "i": float64(i)}, got.Value, fmt.Sprintf("writer %d step %d", w, i))
				}
				require.Nil(e.t, e.get(ns, "tmp"))
			}
			hot := e.get([]string{"conc", "hot"}, "k")
			require.NotNil(e.t, hot)
			require.Contains(e.t, hot.Value, "w")
			require.Contains(e.t, hot.Value, "i")
			require.Len(e.t, e.list(store.Prefix("conc")), writers+1)
		},
	},
	{
		name:        "large-values",
		explanation: "large values round trip: a 1 MiB string, an object with 5,000 keys, an array of 10,000 numbers and 100 levels of nesting, and filters still work on them",
		run: func(e *env) {
			ns := []string{"large"}
			big := strings.Repeat("0123456789abcdef", 1<<16)
			many := map[string]any{"kind": "many"}
			for i := range 5000 {
				many[fmt.Sprintf("key-%04d", i)] = i
			}
			arr := make([]any, 10000)
			for i := range arr {
				arr[i] = float64(i) / 4
			}
			var deep any = "bottom"
			for range 100 {
				deep = map[string]any{"d": []any{deep}}
			}
			values := map[string]map[string]any{
				"big":  {"kind": "big", "s": big},
				"many": many,
				"arr":  {"kind": "arr", "a": arr},
				"deep": {"kind": "deep", "d": deep},
			}
			for k, v := range values {
				e.put(ns, k, v)
			}
			for k, v := range values {
				got := e.get(ns, k)
				require.NotNil(e.t, got, k)
				e.requireValue(normalize(e.t, v), got.Value, k)
			}
			found := e.search(ns, store.Filter(map[string]any{"kind": "big"}))
			require.Len(e.t, found, 1)
			require.Equal(e.t, big, found[0].Value["s"])
			require.Equal(e.t, []string{"large/many"}, e.ids(e.search(ns, store.Filter(map[string]any{"key-4999": map[string]any{"$gte": 4999}}))))
		},
	},
	{
		name:        "unusual-keys-and-labels",
		explanation: "keys may be any string (empty, with dots, slashes, quotes, SQL, control characters, non-ASCII) and labels any non-empty string without \".\"; value keys with dots, quotes, \"$\" or non-ASCII are filtered on literally, never as paths",
		run: func(e *env) {
			keys := []string{"", " ", "ключ", "🔑", "a.b.c", "a/b", "%", "_", "'; DROP TABLE items; --", `"quoted"`, "back\\slash", "tab\tnl\n", "日本語", "*"}
			nss := [][]string{{"ünïcödé", "名前"}, {"*"}, {"emoji", "🧠"}, {"sql", "'"}, {"100%", "_x_"}, {"sp ace", "-"}}
			for _, ns := range nss {
				for i, k := range keys {
					e.put(ns, k, map[string]any{"i": i, "k": k})
				}
			}
			for _, ns := range nss {
				for i, k := range keys {
					got := e.get(ns, k)
					require.NotNil(e.t, got, "%q %q", ns, k)
					require.Equal(e.t, k, got.Key)
					require.Equal(e.t, ns, got.Namespace)
					e.requireValue(map[string]any{"i": float64(i), "k": k}, got.Value, fmt.Sprintf("%q %q", ns, k))
				}
				found := e.search(ns, store.Limit(100))
				var gotKeys []string
				for _, it := range found {
					gotKeys = append(gotKeys, it.Key)
				}
				require.ElementsMatch(e.t, keys, gotKeys, "%q", ns)
			}
			want := slices.Clone(nss)
			slices.SortFunc(want, slices.Compare)
			require.Equal(e.t, want, e.list())

			vns := []string{"vals"}
			e.put(vns, "1", map[string]any{"a.b": 1, `quote"key`: 2, "$dollar": 3, "ключ": "значение", "back\\slash": 4, "a": map[string]any{"b": 1}})
			e.put(vns, "2", map[string]any{"a.b": 2, `quote"key`: 3, "$dollar": 4, "ключ": "другое", "back\\slash": 5})
			e.put(vns, "3", map[string]any{"a": map[string]any{"b": 1}})
			for _, f := range []map[string]any{
				{"a.b": 1}, {`quote"key`: 2}, {"$dollar": 3}, {"ключ": "значение"}, {"back\\slash": 4},
				{"a.b": map[string]any{"$lt": 2}}, {`quote"key`: map[string]any{"$lte": 2}}, {"ключ": map[string]any{"$gt": "ж"}},
			} {
				require.Equal(e.t, []string{"vals/1"}, e.ids(e.search(vns, store.Filter(f))), "filter %v", f)
			}
		},
	},
	{
		name:        "json-text-kept-in-order",
		explanation: "a value put WithJSON reads back from Get and Search with Item.JSON the text as put, normalized (no whitespace, a repeated key once at its first place with its last value), keys in the text's order at every level, and Value its decoding; filters and ListNamespaces work on it as on any value (a store that keeps no texts returns a nil Item.JSON and skips this)",
		run: func(e *env) {
			ns := []string{"json", "order"}
			text := "{ \"b\": 1,\n \"a\": {\"z\": true, \"y\": [3, {\"d\": 1.0, \"c\": \"x\"}]}, \"m\": null }"
			want := `{"b":1,"a":{"z":true,"y":[3,{"d":1.0,"c":"x"}]},"m":null}`
			e.put(ns, "k", obj(text), store.WithJSON([]byte(text)))
			got := e.get(ns, "k")
			require.NotNil(e.t, got)
			if got.JSON == nil {
				e.t.Skip("the store keeps no JSON texts: Item.JSON is nil")
			}
			require.Equal(e.t, want, string(got.JSON), "Get")
			e.requireValue(obj(text), got.Value, "Get")
			found := e.search(ns, store.Filter(map[string]any{"b": 1}))
			require.Len(e.t, found, 1)
			require.Equal(e.t, want, string(found[0].JSON), "Search")
			e.requireValue(obj(text), found[0].Value, "Search")
			require.Empty(e.t, e.search(ns, store.Filter(map[string]any{"b": 2})))
			require.Equal(e.t, [][]string{ns}, e.list())

			dup := `{"a":1,"b":2,"a":{"x":1,"x":[3]}}`
			e.put(ns, "dup", obj(dup), store.WithJSON([]byte(dup)))
			got = e.get(ns, "dup")
			require.Equal(e.t, `{"a":{"x":[3]},"b":2}`, string(got.JSON), "a repeated key")
			e.requireValue(obj(`{"a":{"x":[3]},"b":2}`), got.Value, "a repeated key")

			got.JSON[1] = 'X'
			require.Equal(e.t, want, string(e.get(ns, "k").JSON), "Item.JSON is the caller's copy")
		},
	},
	{
		name:        "json-text-replaced-on-update",
		explanation: "putting an item again replaces its text: with another WithJSON text, Item.JSON is the new text; without WithJSON, Item.JSON is nil and Value the new map",
		run: func(e *env) {
			ns := []string{"json", "update"}
			e.put(ns, "k", obj(`{"b":1,"a":2}`), store.WithJSON([]byte(`{"b":1,"a":2}`)))
			if e.get(ns, "k").JSON == nil {
				e.t.Skip("the store keeps no JSON texts: Item.JSON is nil")
			}
			e.put(ns, "k", obj(`{"z":1,"c":2,"a":3}`), store.WithJSON([]byte(`{"z":1,"c":2,"a":3}`)))
			got := e.get(ns, "k")
			require.Equal(e.t, `{"z":1,"c":2,"a":3}`, string(got.JSON))
			e.requireValue(obj(`{"z":1,"c":2,"a":3}`), got.Value, "after a put with a new text")
			e.put(ns, "k", obj(`{"y":1,"x":2}`))
			got = e.get(ns, "k")
			require.Nil(e.t, got.JSON, "a put without a text leaves none")
			e.requireValue(obj(`{"y":1,"x":2}`), got.Value, "after a put without a text")
			found := e.search(ns)
			require.Len(e.t, found, 1)
			require.Nil(e.t, found[0].JSON)
		},
	},
	{
		name:        "values-without-json-text",
		explanation: "an item put without WithJSON reads back as before: Item.JSON nil from Get and Search, Value the map's JSON decoding",
		run: func(e *env) {
			ns := []string{"json", "none"}
			e.put(ns, "k", map[string]any{"b": 1, "a": []int{2}})
			got := e.get(ns, "k")
			require.Nil(e.t, got.JSON)
			e.requireValue(obj(`{"a":[2],"b":1}`), got.Value, "Get")
			found := e.search(ns)
			require.Len(e.t, found, 1)
			require.Nil(e.t, found[0].JSON)
		},
	},
	{
		name:        "json-text-checked",
		explanation: "Put WithJSON fails with an error wrapping store.ErrInvalidOption, storing nothing and leaving the item there as it was, when the text disagrees with the value (another number, a missing or extra key), is not a JSON object, is invalid JSON, has data after the object, or nests deeper than 10,000 levels; a text agreeing with the value by JSON equality (1 and 1.0) is accepted",
		run: func(e *env) {
			ns := []string{"json", "checked"}
			e.put(ns, "k", obj(`{"a":1}`))
			deep := strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001)
			for _, tt := range []struct {
				name  string
				value map[string]any
				text  string
			}{
				{"another number", obj(`{"a":2}`), `{"a":3}`},
				{"a missing key", obj(`{"a":2,"b":1}`), `{"a":2}`},
				{"an extra key", obj(`{"a":2}`), `{"a":2,"b":1}`},
				{"a nested difference", obj(`{"a":{"b":[1,2]}}`), `{"a":{"b":[2,1]}}`},
				{"a string for a number", obj(`{"a":2}`), `{"a":"2"}`},
				{"an array", obj(`{}`), `[1]`},
				{"a string", obj(`{}`), `"{}"`},
				{"null", obj(`{}`), `null`},
				{"empty", obj(`{}`), ``},
				{"invalid", obj(`{"a":2}`), `{"a":2`},
				{"data after", obj(`{"a":2}`), `{"a":2} {"a":2}`},
				{"a number out of range", obj(`{}`), `{"a":1e400}`},
				{"too deep", obj(`{}`), deep},
			} {
				err := e.s.Put(e.ctx, ns, "k", tt.value, store.WithJSON([]byte(tt.text)))
				require.ErrorIs(e.t, err, store.ErrInvalidOption, tt.name)
				err = e.s.Put(e.ctx, ns, "new", tt.value, store.WithJSON([]byte(tt.text)))
				require.ErrorIs(e.t, err, store.ErrInvalidOption, tt.name)
				require.Nil(e.t, e.get(ns, "new"), "%s: nothing stored", tt.name)
				got := e.get(ns, "k")
				require.Nil(e.t, got.JSON, tt.name)
				e.requireValue(obj(`{"a":1}`), got.Value, tt.name+": the item is as it was")
			}
			e.put(ns, "k", map[string]any{"a": 1, "b": int64(2)}, store.WithJSON([]byte(`{"b":2.0,"a":1}`)))
			e.requireValue(obj(`{"a":1,"b":2}`), e.get(ns, "k").Value, "JSON-equal text and value")
		},
	},
	{
		name:        "json-text-large-and-unusual",
		explanation: "texts round trip at size and with unusual content: 5,000 keys in descending order, a 1 MiB string, strings with escapes, HTML characters, non-ASCII and invalid UTF-8 (read back as U+FFFD, as encoding/json decodes it), numbers spelled as given; a text with U+0000 either round trips or fails and stores nothing (PostgreSQL's jsonb cannot hold it)",
		run: func(e *env) {
			ns := []string{"json", "large"}
			var b strings.Builder
			b.WriteString(`{"s":"` + strings.Repeat("0123456789abcdef", 1<<16) + `"`)
			for i := 4999; i >= 0; i-- {
				fmt.Fprintf(&b, `,"k%04d":%d`, i, i)
			}
			b.WriteString("}")
			big := b.String()
			e.put(ns, "big", obj(big), store.WithJSON([]byte(big)))
			got := e.get(ns, "big")
			if got.JSON == nil {
				e.t.Skip("the store keeps no JSON texts: Item.JSON is nil")
			}
			require.True(e.t, string(got.JSON) == big, "5,000 keys in descending order and a 1 MiB string")

			odd := "{\"é\":\"\\u00e9<&>\\n\\u2028 🐴\",\"bad\":\"a\xffb\",\"n\":[1E2,-0,0.50,12345678901234567890]}"
			e.put(ns, "odd", obj(odd), store.WithJSON([]byte(odd)))
			got = e.get(ns, "odd")
			require.Equal(e.t, "{\"é\":\"é<&>\\n\\u2028 🐴\",\"bad\":\"a\ufffdb\",\"n\":[1E2,-0,0.50,12345678901234567890]}", string(got.JSON))
			e.requireValue(obj(odd), got.Value, "odd")

			nul := `{"s":"a\u0000b","\u0000":1}`
			if err := e.s.Put(e.ctx, ns, "nul", obj(nul), store.WithJSON([]byte(nul))); err != nil {
				require.Nil(e.t, e.get(ns, "nul"), "a failed put stores nothing")
				return
			}
			got = e.get(ns, "nul")
			require.Equal(e.t, nul, string(got.JSON))
			e.requireValue(obj(nul), got.Value, "U+0000")
		},
	},
	{
		name:        "context-cancelled",
		explanation: "every method called with a cancelled context returns an error wrapping context.Canceled",
		run: func(e *env) {
			ns := []string{"ctx"}
			e.put(ns, "k", obj(`{}`))
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := e.s.Get(ctx, ns, "k")
			require.ErrorIs(e.t, err, context.Canceled, "Get")
			require.ErrorIs(e.t, e.s.Put(ctx, ns, "k2", obj(`{}`)), context.Canceled, "Put")
			require.ErrorIs(e.t, e.s.Delete(ctx, ns, "k"), context.Canceled, "Delete")
			_, err = e.s.Search(ctx, ns)
			require.ErrorIs(e.t, err, context.Canceled, "Search")
			_, err = e.s.ListNamespaces(ctx)
			require.ErrorIs(e.t, err, context.Canceled, "ListNamespaces")
			if e.sweeper != nil {
				_, err = e.sweeper.Sweep(ctx)
				require.ErrorIs(e.t, err, context.Canceled, "Sweep")
			}
			require.NotNil(e.t, e.get(ns, "k"), "the cancelled Delete deleted nothing")
			require.Nil(e.t, e.get(ns, "k2"), "the cancelled Put stored nothing")
		},
	},
}

// concurrentWriter puts steps items under its own namespace, overwrites a
// shared hot item, reads back and searches its own items, and puts and
// deletes a temporary item; it may run on any goroutine.
func concurrentWriter(ctx context.Context, s store.Store, w, steps int) error {
	ns := []string{"conc", fmt.Sprint(w)}
	for i := range steps {
		key := fmt.Sprint(i)
		v := map[string]any{"w": w, "i": i}
		if err := s.Put(ctx, ns, key, v); err != nil {
			return err
		}
		if err := s.Put(ctx, []string{"conc", "hot"}, "k", v); err != nil {
			return err
		}
		got, err := s.Get(ctx, ns, key)
		if err != nil {
			return err
		}
		if got == nil || got.Value["i"] != float64(i) || got.Value["w"] != float64(w) {
			return fmt.Errorf("writer %d step %d: Get returned %+v", w, i, got)
		}
		if err := s.Put(ctx, ns, "tmp", v); err != nil {
			return err
		}
		found, err := s.Search(ctx, ns, store.Limit(100))
		if err != nil {
			return err
		}
		if len(found) != i+2 {
			return fmt.Errorf("writer %d step %d: Search found %d items, want %d", w, i, len(found), i+2)
		}
		if err := s.Delete(ctx, ns, "tmp"); err != nil {
			return err
		}
		if _, err := s.ListNamespaces(ctx, store.Prefix("conc")); err != nil {
			return err
		}
	}
	return nil
}

// start is the suite clock's initial time: fixed, in UTC, and a whole
// number of microseconds.
var start = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

// clock is the fake time the suite gives stores through SetClock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	t       *testing.T
	ctx     context.Context
	s       store.Store
	clock   *clock // nil if the store is not a ClockSetter
	sweeper store.Sweeper
}

// advance moves the suite clock, if the store has one.
func (e *env) advance(d time.Duration) {
	if e.clock != nil {
		e.clock.advance(d)
	}
}

func (e *env) put(ns []string, key string, value map[string]any, opts ...store.PutOption) {
	e.t.Helper()
	require.NoError(e.t, e.s.Put(e.ctx, ns, key, value, opts...), "Put(%q, %q)", ns, key)
}

func (e *env) get(ns []string, key string, opts ...store.GetOption) *store.Item {
	e.t.Helper()
	it, err := e.s.Get(e.ctx, ns, key, opts...)
	require.NoError(e.t, err, "Get(%q, %q)", ns, key)
	return it
}

func (e *env) search(prefix []string, opts ...store.SearchOption) []store.Item {
	e.t.Helper()
	items, err := e.s.Search(e.ctx, prefix, opts...)
	require.NoError(e.t, err, "Search(%q)", prefix)
	return items
}

func (e *env) list(opts ...store.ListOption) [][]string {
	e.t.Helper()
	nss, err := e.s.ListNamespaces(e.ctx, opts...)
	require.NoError(e.t, err, "ListNamespaces(%s)", describe(opts))
	return nss
}

func (e *env) sweep() int {
	e.t.Helper()
	n, err := e.sweeper.Sweep(e.ctx)
	require.NoError(e.t, err, "Sweep")
	return n
}

// item returns the item Get should return for a Put of value at the
// current time without a TTL.
func (e *env) item(ns []string, key, value string) store.Item {
	var now time.Time
	if e.clock != nil {
		now = e.clock.Now()
	}
	return store.Item{Namespace: ns, Key: key, Value: obj(value), CreatedAt: now, UpdatedAt: now}
}

// requireItem compares got with want; without a suite clock it checks
// only that the timestamps are set consistently.
func (e *env) requireItem(want store.Item, got *store.Item) {
	e.t.Helper()
	require.NotNil(e.t, got, "no item %q %q", want.Namespace, want.Key)
	if e.clock == nil {
		require.False(e.t, got.CreatedAt.IsZero(), "CreatedAt")
		require.False(e.t, got.UpdatedAt.Before(got.CreatedAt), "UpdatedAt before CreatedAt")
		want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
		if !want.ExpiresAt.IsZero() {
			want.ExpiresAt = got.ExpiresAt
		}
	}
	if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty()); diff != "" {
		e.t.Fatalf("item mismatch (-want +got):\n%s", diff)
	}
}

func (e *env) requireValue(want, got map[string]any, what string) {
	e.t.Helper()
	if reflect.DeepEqual(want, got) {
		return // cmp.Diff is slow on large values
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		e.t.Fatalf("%s: value mismatch (-want +got):\n%s", what, diff)
	}
}

// requireKeys checks the keys of items: in order with a suite clock (the
// items were put in order), as a set without one.
func (e *env) requireKeys(want []string, items []store.Item, msgAndArgs ...any) {
	e.t.Helper()
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
	}
	if e.clock == nil {
		require.ElementsMatch(e.t, want, got, msgAndArgs...)
		return
	}
	require.Equal(e.t, want, got, msgAndArgs...)
}

// ids returns "label.label/key" for each item.
func (e *env) ids(items []store.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
	}
	return out
}

func (e *env) requireInvalidNamespace(ns []string, err error, format string, args ...any) {
	e.t.Helper()
	what := fmt.Sprintf(format, args...)
	nerr, ok := errors.AsType[*store.InvalidNamespaceError](err)
	require.True(e.t, ok, "%s: got error %v, want a *store.InvalidNamespaceError", what, err)
	require.Empty(e.t, cmp.Diff(ns, nerr.Namespace, cmpopts.EquateEmpty()), "%s: InvalidNamespaceError.Namespace", what)
	require.NotEmpty(e.t, nerr.Message)
}

// obj decodes a JSON object.
func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(fmt.Sprintf("storetest: bad JSON %s: %v", s, err))
	}
	return m
}

// normalize returns v as it reads back from a store.
func normalize(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func describe(opts []store.ListOption) string {
	var parts []string
	for _, o := range opts {
		parts = append(parts, fmt.Sprintf("%#v", o))
	}
	return strings.Join(parts, ", ")
}
