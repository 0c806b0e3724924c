// Package storetest implements support for testing implementations of
// [store.Store], in the manner of testing/slogtest.
//
// A store's tests call [Run] with a function that returns a new, empty
// store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run executes one subtest per promise of the Store contract: reading back
// what was put (values as JSON, timestamps, copies), overwriting and
// deleting, isolation of namespaces, namespace validation, searching by
// prefix with equality filters and each operator, limits, offsets and
// ordering, listing namespaces with prefixes, suffixes, wildcards, maximum
// depths and pages, expiry, TTL refresh and sweeping, concurrent writers,
// large values, unusual keys and labels, values put with their JSON text
// ([store.WithJSON]: the text read back in its key order, replaced on
// update, checked against the value), and cancellation. A failing
// subtest logs the promise it checks. Stores that keep no JSON texts (a
// nil [store.Item.JSON]) skip the subtests that read texts back.
//
// Stores with semantic search also call [RunSemantic], whose function
// opens a store with the [store.IndexConfig] it is given (or without an
// index, given nil):
//
//	func TestSemanticConformance(t *testing.T) {
//		storetest.RunSemantic(t, func(t *testing.T, index *store.IndexConfig) store.Store {
//			var opts []mystore.Option
//			if index != nil {
//				opts = append(opts, mystore.WithIndex(*index))
//			}
//			return open(t, opts...)
//		})
//	}
//
// Its subtests check ranking and scores with a deterministic embedder,
// ties, field paths, per-item IndexFields and NoIndex, prefix and filter
// with a query, offsets and limits, that overwrites, deletes, expiry and
// sweeps leave no stale vectors, that a failing embedder loses nothing, a
// query on a store without an index, and concurrent puts and searches.
//
// # Time
//
// Timestamps, ordering and TTLs are tested without sleeping, on a clock
// the suite advances itself: if the store implements [store.ClockSetter],
// Run gives every new store a fake clock with SetClock before using it,
// starting at a fixed microsecond-aligned time and moving only when the
// suite says so. Subtests that need that clock are skipped for stores
// that do not implement the interface, and so are the subtests of
// [store.Sweeper] for stores that do not implement it. Stores must keep
// timestamps to at least the microsecond.
package storetest
