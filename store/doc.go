// Package store is long-term memory for agents: JSON objects kept under
// hierarchical namespaces and shared across threads, LangGraph's
// BaseStore. Where a [checkpoint.Saver] remembers one thread's state, a
// [Store] remembers what outlives threads: user preferences, facts learned
// in earlier conversations, documents.
//
// An item is a JSON object stored under a namespace, a path of labels such
// as ["users", "u-42", "memories"], and a key:
//
//	s := store.NewMemory() // or sqlite.Open, postgres.Open
//	ns := []string{"users", "u-42", "memories"}
//	err := s.Put(ctx, ns, "food", map[string]any{"likes": "pizza", "stars": 4})
//	item, err := s.Get(ctx, ns, "food") // nil, nil if there is none
//
// Search returns the items under a namespace prefix, most recently updated
// first, optionally filtered on the values' top-level keys, exactly or
// with the operators $eq, $ne, $gt, $gte, $lt and $lte:
//
//	items, err := s.Search(ctx, []string{"users", "u-42"},
//		store.Filter(map[string]any{"stars": map[string]any{"$gte": 4}}),
//		store.Limit(20), store.Offset(40))
//
// ListNamespaces explores the hierarchy; "*" matches any one label:
//
//	nss, err := s.ListNamespaces(ctx, store.Prefix("users", "*", "memories"), store.MaxDepth(2))
//
// A map[string]any has no key order, so a value reads back with its keys
// sorted, unless it was put with the JSON text it came as: [WithJSON]
// gives Put the text beside the map (the store checks that they agree),
// and [Item.JSON] returns it, keys in the text's order, as LangGraph's
// JS server answers values as they were sent:
//
//	err := s.Put(ctx, ns, "k", value, store.WithJSON(body)) // value decoded from body
//	item, err := s.Get(ctx, ns, "k") // item.JSON: body, compacted; item.Value: value
//
// # Semantic search
//
// A store opened with an [IndexConfig] ([WithIndex] for [Memory], the
// WithIndex options of store/sqlite and store/postgres) embeds each item
// it puts, and Search with [Query] ranks items by meaning, as LangGraph's
// stores configured with index={"embed", "dims", "fields"} do:
//
//	e := llm.NewHashingEmbedder(256) // offline; or llm.NewEmbedder("openai:text-embedding-3-small")
//	s := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: e, Dims: e.Dims(), Fields: []string{"text", "meta.title"}}))
//	err := s.Put(ctx, ns, "food", map[string]any{"text": "likes ramen"})
//	err = s.Put(ctx, ns, "draft", value, store.NoIndex())             // index=False
//	err = s.Put(ctx, ns, "doc", value, store.IndexFields("body[*].text")) // index=[...]
//	items, err := s.Search(ctx, ns, store.Query("what food?"), store.Filter(f), store.Limit(5))
//	fmt.Println(items[0].Key, *items[0].Score)
//
// The embedder is any [Embedder], an interface with the method set of
// llm.Embedder, so the embedders of package llm plug in directly (this
// package does not import llm). The fields are paths into the value: "$"
// for all of it (the default), dotted keys and array indexes ("meta.title",
// "chunks[*].text", "tags[-1]"), not LangGraph's "{a,b}" selections (see
// [IndexFields]). An item's score is the best cosine similarity of its
// texts' vectors to the query's vector, in [-1, 1]; items come best first,
// ties ordered as without a query, and the namespace prefix, filters,
// offset and limit apply as usual.
//
// Put embeds before it writes, outside any lock or transaction: if the
// embedder fails, Put returns its error and the store is unchanged.
// Overwriting an item replaces its vectors, and deleting it (or its
// expiry and sweep) removes them, so a vector never outlives the value it
// was computed from. SQLite and PostgreSQL keep vectors durably, beside
// the items, as little-endian float32s; PostgreSQL needs no pgvector: both
// stream the candidate rows matching the prefix and filter and compute
// the cosine in Go, keeping only the best Offset+Limit items in memory.
// That is a scan of the candidates, not an approximate-nearest-neighbour
// index: narrow the prefix or filter for large stores.
//
// Vectors are computed once, at Put. Items put before the store had an
// index have none until they are put again; after a change of embedder,
// put the items again too: vectors of another dimension make query
// searches fail, and vectors of another model of the same dimension rank
// meaninglessly.
//
// Differences from LangGraph: a Query on a store without an index fails
// with [ErrNoIndex] (LangGraph ignores it); items without vectors are
// never returned by a query search (as in LangGraph's PostgreSQL store;
// its in-memory store appends them, unscored, to a short page); non-string
// values are embedded as their JSON encoding (LangGraph: Python's str()
// for numbers and booleans); and an item's old vectors never survive an
// overwrite (LangGraph's in-memory store keeps the vectors of fields the
// new value lacks).
//
// # A store or a checkpointer
//
// Use a checkpointer for what belongs to one thread and must come back
// exactly as it was after a pause or a crash: the state of a run, step by
// step. Use a store for what several threads read and write — a user's
// preferences, facts an agent learned, documents — looked up by key or
// searched by namespace and value. Nodes reach a store by closure, as in
// the acrossThreads example; it is not part of the state, so a write to it
// is a side effect, which a node re-run after a crash repeats. A store is not a database
// table with transactions either: it has no conditional write, no
// transaction across items and no ordering but by last update, so a record
// that several processes update in turn and must not lose an update of —
// a job queue, a run's status — is better kept in a table of its own, or
// in a checkpoint thread, whose lease admits one writer at a time.
//
// # Namespaces
//
// A namespace has at least one label; labels are non-empty, contain no
// "." (stores join labels with "."), and the first is not
// [ReservedLabel]. Methods given an invalid namespace fail with a
// [*InvalidNamespaceError] whose message mirrors LangGraph's.
//
// # Expiry
//
// Put with [WithTTL] makes an item expire. An expired item is absent for
// every method at once; [Sweeper.Sweep] deletes expired items to reclaim
// space (see [SweepEvery]). Get and Search extend the TTLs of the items
// they return unless given RefreshTTL(false).
//
// # Implementations
//
// [Memory] (from [NewMemory]) keeps items in memory; the subpackages
// store/sqlite and store/postgres keep them in SQLite and PostgreSQL, in
// tables prefixed agentgraph_store_ that may share a database with the
// checkpoint savers. store/storetest is the conformance suite every
// implementation passes. The exported configurations ([NewSearchConfig],
// [NewListConfig], ...) and helpers ([ValidateNamespace], [MarshalValue],
// [PutConfig.Encode], [SearchConfig.Match], [ListConfig.Apply]) let other
// implementations share the exact semantics. A store that keeps no JSON
// texts may ignore [WithJSON]: its items read back with a nil
// [Item.JSON], and the server answers their values with sorted keys.
//
// [checkpoint.Saver]: https://pkg.go.dev/github.com/agentgraph/agentgraph/checkpoint#Saver
package store
