package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/store"
	stpostgres "github.com/agentgraph/agentgraph/store/postgres"
	stsqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

// orderStores are the stores the /store routes are checked against for
// values answered as they were put.
var orderStores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"memory", func(t *testing.T) store.Store { return store.NewMemory() }},
	{"sqlite", func(t *testing.T) store.Store {
		s, err := stsqlite.Open(t.Context(), filepath.Join(t.TempDir(), "store.db"))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T) store.Store {
		url := pgdbtest.URL(t)
		s, err := stpostgres.Open(t.Context(), url, stpostgres.WithSchema(pgdbtest.FreshSchema(t, "srv_store")), stpostgres.WithMaxConns(2))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// putRaw PUTs an item whose value is the JSON text value, sent as is.
func putRaw(e *env, ns, key, value string) {
	e.t.Helper()
	body := fmt.Sprintf(`{"namespace":[%q],"key":%q,"value":%s}`, ns, key, value)
	r := e.do("PUT", "/store/items", body)
	require.Equal(e.t, 204, r.status, "%s", r.body)
}

// rawValues returns the value texts of an answer holding one item (GET)
// or a list of them (search), as the server wrote them.
func rawValues(t *testing.T, body []byte) []string {
	t.Helper()
	type item struct {
		Value json.RawMessage `json:"value"`
	}
	var list struct {
		Items []item `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &list), "%s", body)
	if list.Items == nil {
		var one item
		require.NoError(t, json.Unmarshal(body, &one), "%s", body)
		return []string{string(one.Value)}
	}
	var out []string
	for _, it := range list.Items {
		out = append(out, string(it.Value))
	}
	return out
}

func TestStoreAnswersValuesWithTheirKeysInTheOrderPut(t *testing.T) {
	for _, st := range orderStores {
		t.Run(st.name, func(t *testing.T) {
			e := newEnv(t, server.WithStore(st.open(t)))
			putRaw(e, "o", "k", `{ "b": 1, "a": {"d": [1, {"z": 0, "y": "<&>"}], "c": 2.50} }`)
			want := `{"b":1,"a":{"d":[1,{"z":0,"y":"\u003c\u0026\u003e"}],"c":2.50}}`
			require.Equal(t, []string{want}, rawValues(t, e.ok("GET", "/store/items?namespace=o&key=k", nil, nil).body), "GET")
			require.Equal(t, []string{want}, rawValues(t, e.ok("POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"o"}}, nil).body), "search")
			require.Equal(t, []string{want}, rawValues(t, e.ok("POST", "/store/items/search", map[string]any{"filter": map[string]any{"b": 1}}, nil).body), "search with a filter")
			var ns struct {
				Namespaces [][]string `json:"namespaces"`
			}
			e.ok("POST", "/store/namespaces", map[string]any{}, &ns)
			require.Equal(t, [][]string{{"o"}}, ns.Namespaces)
		})
	}
}

func TestStorePutAgainAnswersTheNewOrder(t *testing.T) {
	for _, st := range orderStores {
		t.Run(st.name, func(t *testing.T) {
			e := newEnv(t, server.WithStore(st.open(t)))
			putRaw(e, "o", "k", `{"b":1,"a":2}`)
			putRaw(e, "o", "k", `{"z":1,"c":2,"a":3}`)
			require.Equal(t, []string{`{"z":1,"c":2,"a":3}`}, rawValues(t, e.ok("GET", "/store/items?namespace=o&key=k", nil, nil).body))
		})
	}
}

func TestStoreAnswersARepeatedKeyOnceWithItsLastValue(t *testing.T) {
	e := newEnv(t, server.WithStore(orderStores[1].open(t)))
	putRaw(e, "o", "k", `{"a":1,"b":2,"a":3}`)
	require.Equal(t, []string{`{"a":3,"b":2}`}, rawValues(t, e.ok("GET", "/store/items?namespace=o&key=k", nil, nil).body))
	r := e.ok("POST", "/store/items/search", map[string]any{"filter": map[string]any{"a": 3}}, nil)
	require.Equal(t, []string{`{"a":3,"b":2}`}, rawValues(t, r.body), "the filter sees the value answered")
}

func TestStoreAnswersItemsPutWithoutTextWithSortedKeys(t *testing.T) {
	st := store.NewMemory()
	e := newEnv(t, server.WithStore(st))
	require.NoError(t, st.Put(t.Context(), []string{"o"}, "k", map[string]any{"b": 1, "a": 2}))
	require.Equal(t, []string{`{"a":2,"b":1}`}, rawValues(t, e.ok("GET", "/store/items?namespace=o&key=k", nil, nil).body))
}

func TestStoreAnswersALargeValueInTheOrderPut(t *testing.T) {
	e := newEnv(t, server.WithStore(orderStores[1].open(t)))
	var b strings.Builder
	b.WriteString(`{"s":"` + strings.Repeat("x", 512<<10) + `"`)
	for i := 2000; i > 0; i-- {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	b.WriteString("}")
	putRaw(e, "o", "big", b.String())
	require.True(t, rawValues(t, e.ok("GET", "/store/items?namespace=o&key=big", nil, nil).body)[0] == b.String())
}
