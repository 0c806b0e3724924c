package state_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// uncachedJSON is what Messages.MarshalJSON gives without any reuse: the
// history encoded by encoding/json, [] when empty.
func uncachedJSON(t testing.TB, f state.Messages) string {
	t.Helper()
	if f.Len() == 0 {
		return "[]"
	}
	b, err := json.Marshal(f.List())
	require.NoError(t, err)
	return string(b)
}

// requireEncodes checks that f encodes as an uncached encoding would, twice
// (the second call is served from the cache the first one filled).
func requireEncodes(t testing.TB, f state.Messages) {
	t.Helper()
	want := uncachedJSON(t, f)
	for range 2 {
		got, err := f.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
}

// step merges the writes made by each of writers into a copy of cur.
func step(t testing.TB, cur state.Messages, writers ...func(*state.Messages)) state.Messages {
	t.Helper()
	ws := make([]state.Messages, len(writers))
	chans := make([]state.Channel, len(writers))
	for i, write := range writers {
		write(&ws[i])
		chans[i] = ws[i].Channel()
	}
	require.NoError(t, cur.Channel().MergeWrites(chans))
	return cur
}

func appending(msgs ...state.Message) func(*state.Messages) {
	return func(w *state.Messages) { w.Append(msgs...) }
}

// turn returns a few messages of a chat turn with texts that need escaping.
func turn(i int) []state.Message {
	return []state.Message{
		state.Human(fmt.Sprintf("question %d <b>&</b> \u2028 \"quoted\"", i)),
		state.AI(fmt.Sprintf("answer %d", i), state.ToolCall(fmt.Sprintf("call_%d", i), "search", `{"q":"<x>"}`)),
		state.Tool(fmt.Sprintf("call_%d", i), "search", strings.Repeat("é", i%7)),
	}
}

func TestMessagesMarshalJSONReusesPrefix(t *testing.T) {
	type op struct {
		name string
		// do returns the next history, checking any side histories itself.
		do func(t *testing.T, cur state.Messages) state.Messages
	}
	appendTurn := func(i int) op {
		return op{fmt.Sprintf("append turn %d", i), func(t *testing.T, cur state.Messages) state.Messages {
			return step(t, cur, appending(turn(i)...))
		}}
	}
	replace := func(pos int, text string) op {
		return op{fmt.Sprintf("replace #%d", pos), func(t *testing.T, cur state.Messages) state.Messages {
			m := state.Human(text)
			m.ID = cur.List()[pos].ID
			return step(t, cur, appending(m))
		}}
	}
	replaceLast := op{"replace last", func(t *testing.T, cur state.Messages) state.Messages {
		m := state.AI("edited last")
		m.ID = cur.List()[cur.Len()-1].ID
		return step(t, cur, appending(m))
	}}
	remove := func(pos int) op {
		return op{fmt.Sprintf("remove #%d", pos), func(t *testing.T, cur state.Messages) state.Messages {
			id := cur.List()[pos].ID
			return step(t, cur, func(w *state.Messages) { w.Remove(id) })
		}}
	}
	removeAll := op{"remove all", func(t *testing.T, cur state.Messages) state.Messages {
		return step(t, cur, func(w *state.Messages) { w.RemoveAll() })
	}}
	removeAllThenAppend := op{"remove all then append", func(t *testing.T, cur state.Messages) state.Messages {
		return step(t, cur, func(w *state.Messages) { w.RemoveAll(); w.Append(turn(50)...) })
	}}
	overwriteSame := op{"overwrite with the same history", func(t *testing.T, cur state.Messages) state.Messages {
		return step(t, cur, func(w *state.Messages) { w.Overwrite(cur.List()) })
	}}
	overwriteShorter := op{"overwrite with a prefix then append", func(t *testing.T, cur state.Messages) state.Messages {
		return step(t, cur, func(w *state.Messages) { w.Overwrite(cur.List()[:2]); w.Append(state.Human("after")) })
	}}
	twoWriters := op{"two writers in one step", func(t *testing.T, cur state.Messages) state.Messages {
		return step(t, cur, appending(turn(60)...), appending(turn(61)...))
	}}
	fork := func(warm bool) op {
		return op{fmt.Sprintf("fork (base encoded first: %v)", warm), func(t *testing.T, cur state.Messages) state.Messages {
			if warm {
				requireEncodes(t, cur)
			}
			left := step(t, cur, appending(state.Human("left")))
			right := step(t, cur, appending(state.Human("right"), state.AI("right too")))
			requireEncodes(t, right)
			requireEncodes(t, left)
			requireEncodes(t, cur)
			left = step(t, left, appending(turn(70)...))
			requireEncodes(t, right)
			return left
		}}
	}
	copyThenAppend := op{"append to a copy", func(t *testing.T, cur state.Messages) state.Messages {
		cp := cur
		next := step(t, cp, appending(turn(80)...))
		requireEncodes(t, cp)
		return next
	}}
	roundTrip := op{"JSON round trip", func(t *testing.T, cur state.Messages) state.Messages {
		b, err := cur.MarshalJSON()
		require.NoError(t, err)
		var back state.Messages
		require.NoError(t, back.UnmarshalJSON(b))
		if diff := cmp.Diff(cur.List(), back.List(), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the history (-want +got):\n%s", diff)
		}
		return back
	}}
	roundTripCold := op{"JSON round trip, then append before encoding", func(t *testing.T, cur state.Messages) state.Messages {
		var back state.Messages
		require.NoError(t, back.UnmarshalJSON([]byte(uncachedJSON(t, cur))))
		return step(t, back, appending(turn(90)...))
	}}

	scenarios := []struct {
		name string
		ops  []op
	}{
		{"appends only", []op{appendTurn(1), appendTurn(2), appendTurn(3), appendTurn(4)}},
		{"replace in the middle", []op{appendTurn(1), appendTurn(2), replace(1, "new second"), appendTurn(3), replace(0, "new first")}},
		{"replace the last message", []op{appendTurn(1), replaceLast, appendTurn(2), replaceLast, replaceLast}},
		{"remove", []op{appendTurn(1), appendTurn(2), remove(4), appendTurn(3), remove(0), remove(0), appendTurn(4)}},
		{"remove all", []op{appendTurn(1), appendTurn(2), removeAll, appendTurn(3), removeAllThenAppend, appendTurn(4)}},
		{"overwrite", []op{appendTurn(1), appendTurn(2), overwriteSame, appendTurn(3), overwriteShorter, appendTurn(4)}},
		{"several writers", []op{appendTurn(1), twoWriters, appendTurn(2), twoWriters}},
		{"forks", []op{appendTurn(1), fork(true), appendTurn(2), fork(false), fork(true)}},
		{"copies", []op{appendTurn(1), copyThenAppend, copyThenAppend, appendTurn(2)}},
		{"round trips", []op{appendTurn(1), roundTrip, appendTurn(2), roundTripCold, appendTurn(3), removeAll, roundTrip, appendTurn(4)}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var cur state.Messages
			requireEncodes(t, cur)
			history := []state.Messages{cur}
			for _, o := range sc.ops {
				cur = o.do(t, cur)
				requireEncodes(t, cur)
				history = append(history, cur)
			}
			// Every earlier value still encodes its own history.
			for _, h := range history {
				requireEncodes(t, h)
			}
		})
	}
}

func TestMessagesMarshalJSONError(t *testing.T) {
	cur := step(t, state.Messages{}, appending(turn(1)...))
	requireEncodes(t, cur)
	bad := state.Message{ID: "bad", MessageContent: llms.MessageContent{
		Role:  llms.ChatMessageTypeHuman,
		Parts: []llms.ContentPart{llms.WithCacheControl(llms.TextContent{Text: "x"}, nil)},
	}}
	cur = step(t, cur, appending(bad))
	_, want := json.Marshal(cur.List())
	require.Error(t, want)
	for range 2 {
		_, err := cur.MarshalJSON()
		require.EqualError(t, err, want.Error())
	}
	cur = step(t, cur, appending(turn(2)...))
	_, err := cur.MarshalJSON()
	require.EqualError(t, err, want.Error())
	cur = step(t, cur, func(w *state.Messages) { w.Remove("bad") })
	requireEncodes(t, cur)
}

func TestMessagesMarshalJSONConcurrentForks(t *testing.T) {
	base := step(t, state.Messages{}, appending(turn(1)...))
	base = step(t, base, appending(turn(2)...))
	// base is deliberately not encoded yet: the goroutines race to fill its
	// cache while others derive new histories from it.
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			cp := base
			if g%2 == 0 {
				requireEncodes(t, cp)
			}
			cur := cp
			for i := range 5 {
				cur = step(t, cur, appending(state.Human(fmt.Sprintf("goroutine %d message %d", g, i))))
				if g%3 == 0 && i == 2 {
					m := state.Human("replaced")
					m.ID = cur.List()[1].ID
					cur = step(t, cur, appending(m))
				}
				requireEncodes(t, cur)
				requireEncodes(t, cp)
			}
		})
	}
	wg.Wait()
	requireEncodes(t, base)
}

// FuzzMessagesMarshalCache drives appends, replacements, removals, forks and
// round trips over a few histories from the fuzzer's bytes and checks every
// history encodes as encoding/json would.
func FuzzMessagesMarshalCache(f *testing.F) {
	f.Add([]byte{0, 0, 8, 16, 3, 0, 25, 2, 4, 0, 5, 6, 1, 7})
	f.Add([]byte{0, 0, 0, 9, 10, 11, 12, 13, 14, 15, 40, 41, 42})
	f.Fuzz(checkMessagesOps)
}

// checkMessagesOps runs the operations ops encodes; see
// FuzzMessagesMarshalCache.
func checkMessagesOps(t *testing.T, ops []byte) {
	if len(ops) > 256 {
		t.Skip("long inputs only slow the fuzzer down")
	}
	hs := []state.Messages{{}}
	for i, b := range ops {
		k := int(b>>3) % len(hs)
		cur := hs[k]
		var id string
		if cur.Len() > 0 {
			id = cur.List()[int(b>>3)%cur.Len()].ID
		}
		switch b % 8 {
		case 0, 1: // append, to the same history or to a fork of it
			next := step(t, cur, appending(state.Human(fmt.Sprintf("m%d <%d>", i, b)), state.AI(fmt.Sprint(i))))
			if b%8 == 0 {
				hs[k] = next
			} else {
				hs = append(hs, next)
			}
		case 2: // replace
			if id != "" {
				m := state.AI(fmt.Sprintf("r%d", i))
				m.ID = id
				hs[k] = step(t, cur, appending(m))
			}
		case 3: // remove
			if id != "" {
				hs[k] = step(t, cur, func(w *state.Messages) { w.Remove(id) })
			}
		case 4:
			hs[k] = step(t, cur, func(w *state.Messages) { w.RemoveAll() })
		case 5:
			hs[k] = step(t, cur, func(w *state.Messages) { w.Overwrite(cur.List()) })
		case 6: // round trip
			b, err := cur.MarshalJSON()
			require.NoError(t, err)
			require.NoError(t, hs[k].UnmarshalJSON(b))
		case 7:
			requireEncodes(t, cur)
		}
		if len(hs) > 8 {
			hs = hs[1:]
		}
	}
	for _, h := range hs {
		requireEncodes(t, h)
	}
}

// BenchmarkMessagesMarshalGrowing measures one chat step on a long history:
// merge a write appending one message, then encode the whole history, as a
// checkpoint does. The history is reset to its initial size every size
// appends, so it stays between size and 2*size messages. marshal-ns/op is the
// part of ns/op spent in MarshalJSON.
func BenchmarkMessagesMarshalGrowing(b *testing.B) {
	for _, size := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", size), func(b *testing.B) {
			var msgs []state.Message
			for i := 0; len(msgs) < size; i++ {
				msgs = append(msgs, turn(i)...)
			}
			base := step(b, state.Messages{}, appending(msgs[:size]...))
			if _, err := base.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
			cur := base
			var n int
			var marshal time.Duration
			for b.Loop() {
				if cur.Len() >= 2*size {
					cur = base
				}
				w := state.Msgs(turn(n)[n%3])
				if err := cur.Channel().MergeWrites([]state.Channel{w.Channel()}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := cur.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
				marshal += time.Since(start)
				n++
			}
			b.ReportMetric(float64(marshal.Nanoseconds())/float64(n), "marshal-ns/op")
		})
	}
}
