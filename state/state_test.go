package state_test

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// merge applies the writes carried by ws (copies of the same field type) to
// cur, as the runtime does at a step's barrier.
func merge[T any, P interface {
	*T
	Channel() state.Channel
}](t *testing.T, cur T, ws ...T) (T, error) {
	t.Helper()
	var chans []state.Channel
	for i := range ws {
		chans = append(chans, P(&ws[i]).Channel())
	}
	err := P(&cur).Channel().MergeWrites(chans)
	return cur, err
}

func TestValueSetReplacesAndZeroIsAWrite(t *testing.T) {
	cur, err := merge(t, state.Value[int]{}, state.Set(5))
	require.NoError(t, err)
	require.Equal(t, 5, cur.Get())
	cur, err = merge(t, cur, state.Set(0))
	require.NoError(t, err)
	require.Equal(t, 0, cur.Get())
	require.True(t, cur.HasValue())
}

func TestValueTwoWritesConflict(t *testing.T) {
	_, err := merge(t, state.Value[string]{}, state.Set("a"), state.Set("b"))
	require.ErrorIs(t, err, state.ErrConflict)
}

func TestUnwrittenCopyCarriesNoWrite(t *testing.T) {
	cur, err := merge(t, state.Value[int]{}, state.Set(3))
	require.NoError(t, err)
	cp := cur
	require.False(t, cp.Channel().Written(), "a snapshot copy must not re-apply its value")
	cp.Set(4)
	require.True(t, cp.Channel().Written())
	require.Equal(t, 3, cur.Get())
}

func TestReducerFields(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"append concatenates in order", func(t *testing.T) {
			cur, err := merge(t, state.Items(1), state.Items(2, 3), state.Items(4))
			require.NoError(t, err)
			require.Equal(t, []int{2, 3, 4}, cur.Get()) // the base's own pending write is not a value
		}},
		{"append result has cap equal to len", func(t *testing.T) {
			cur, err := merge(t, state.Append[int]{}, state.Items(1, 2))
			require.NoError(t, err)
			g := cur.Get()
			require.Equal(t, len(g), cap(g))
		}},
		{"overwrite clears a list", func(t *testing.T) {
			cur, _ := merge(t, state.Append[int]{}, state.Items(1, 2))
			var w state.Append[int]
			w.Overwrite(nil)
			cur, err := merge(t, cur, w)
			require.NoError(t, err)
			require.Empty(t, cur.Get())
		}},
		{"overwrite wins over the step's other writes", func(t *testing.T) {
			cur, _ := merge(t, state.Append[string]{}, state.Items("a"))
			var b state.Append[string]
			b.Overwrite([]string{"b"})
			cur, err := merge(t, cur, b, state.Items("c"))
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, cur.Get())
		}},
		{"two overwrites in a step conflict", func(t *testing.T) {
			var a, b state.Append[string]
			a.Overwrite([]string{"a"})
			b.Overwrite([]string{"b"})
			_, err := merge(t, state.Append[string]{}, a, b)
			require.ErrorIs(t, err, state.ErrOverwriteConflict)
		}},
		{"sum adds and overwrite resets to zero", func(t *testing.T) {
			cur, err := merge(t, state.Sum[int]{}, state.Delta(2), state.Delta(3))
			require.NoError(t, err)
			require.Equal(t, 5, cur.Get())
			var z state.Sum[int]
			z.Overwrite(0)
			cur, err = merge(t, cur, z)
			require.NoError(t, err)
			require.Equal(t, 0, cur.Get())
		}},
		{"map merges, later key wins, delete removes", func(t *testing.T) {
			cur, err := merge(t, state.Map[string, int]{}, state.Entries(map[string]int{"a": 1, "b": 2}), state.Entries(map[string]int{"b": 3}))
			require.NoError(t, err)
			require.Equal(t, map[string]int{"a": 1, "b": 3}, cur.Get())
			var d state.Map[string, int]
			d.Delete("a")
			cur, err = merge(t, cur, d)
			require.NoError(t, err)
			require.Equal(t, map[string]int{"b": 3}, cur.Get())
		}},
		{"reduced calls the reducer type", func(t *testing.T) {
			var a, b state.Reduced[string, joinWords]
			a.Update("hello")
			b.Update("world")
			cur, err := merge(t, state.Reduced[string, joinWords]{}, a, b)
			require.NoError(t, err)
			require.Equal(t, "hello world", cur.Get())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

type joinWords struct{}

func (joinWords) Reduce(old, u string) string {
	if old == "" {
		return u
	}
	return old + " " + u
}

func msg(id, text string) state.Message {
	m := state.Human(text)
	m.ID = id
	return m
}

func ids(ms []state.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID+"="+m.Text())
	}
	return out
}

// TestMessagesAddMessages ports LangGraph's add_messages unit tests (S61).
func TestMessagesAddMessages(t *testing.T) {
	tests := []struct {
		name  string
		left  []state.Message
		right func(*state.Messages)
		want  []string
		err   bool
	}{
		{"append", []state.Message{msg("1", "a")}, func(m *state.Messages) { m.Append(msg("2", "b")) }, []string{"1=a", "2=b"}, false},
		{"replace by id keeps position", []state.Message{msg("1", "a"), msg("2", "b")}, func(m *state.Messages) { m.Append(msg("1", "A")) }, []string{"1=A", "2=b"}, false},
		{"duplicates in one write", nil, func(m *state.Messages) { m.Append(msg("1", "hi"), msg("1", "hi again")) }, []string{"1=hi again"}, false},
		{"remove then re-add cancels the removal", []state.Message{msg("1", "a")}, func(m *state.Messages) {
			m.Remove("1")
			m.Append(msg("1", "b"), msg("1", "c"))
		}, []string{"1=c"}, false},
		{"remove twice is fine", []state.Message{msg("1", "a"), msg("2", "b")}, func(m *state.Messages) { m.Remove("1"); m.Remove("1") }, []string{"2=b"}, false},
		{"remove unknown id is an error", []state.Message{msg("1", "a")}, func(m *state.Messages) { m.Remove("9") }, nil, true},
		{"mixed", []state.Message{msg("1", "hello"), msg("2", "hi")}, func(m *state.Messages) {
			m.Append(msg("1", "updated"))
			m.Remove("2")
			m.Append(msg("3", "sys"))
		}, []string{"1=updated", "3=sys"}, false},
		{"remove all", []state.Message{msg("1", "a")}, func(m *state.Messages) { m.RemoveAll() }, nil, false},
		{"remove all then append", []state.Message{msg("1", "a")}, func(m *state.Messages) { m.RemoveAll(); m.Append(msg("2", "b")) }, []string{"2=b"}, false},
		{"append, remove all, append keeps the last", []state.Message{msg("1", "a")}, func(m *state.Messages) {
			m.Append(msg("2", "b"))
			m.RemoveAll()
			m.Append(msg("3", "c"))
		}, []string{"3=c"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base state.Messages
			if tt.left != nil {
				var err error
				base, err = merge(t, base, state.Msgs(tt.left...))
				require.NoError(t, err)
			}
			var w state.Messages
			tt.right(&w)
			got, err := merge(t, base, w)
			if tt.err {
				var ue *state.UnknownMessageError
				require.True(t, errors.As(err, &ue), "got %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, ids(got.List()))
		})
	}
}

func TestMessagesMissingIDsAreAssigned(t *testing.T) {
	got, err := merge(t, state.Messages{}, state.Msgs(state.Human("a"), state.Human("b")))
	require.NoError(t, err)
	require.Len(t, got.List(), 2)
	for _, m := range got.List() {
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, m.ID)
	}
	require.NotEqual(t, got.List()[0].ID, got.List()[1].ID)
}

func sampleMessages() []state.Message {
	return []state.Message{
		state.System("be brief"),
		state.Human("what's the weather?"),
		state.AI("let me check", state.ToolCall("call_1", "weather", `{"city":"Paris"}`), state.ToolCall("call_2", "time", `{}`)),
		state.Tool("call_1", "weather", "sunny"),
		{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.ImageURLContent{URL: "https://example.com/a.png", Detail: "low"},
			llms.BinaryContent{MIMEType: "image/png", Data: []byte{0, 1, 2}},
		}}, Name: "alice"},
	}
}

func TestFieldsRoundTripThroughJSON(t *testing.T) {
	type S struct {
		V  state.Value[[]string]
		A  state.Append[int]
		N  state.Sum[float64]
		M  state.Map[string, int]
		R  state.Reduced[string, joinWords]
		Ms state.Messages
	}
	var s S
	s.V, _ = merge(t, s.V, state.Set([]string{"x"}))
	s.A, _ = merge(t, s.A, state.Items(1, 2))
	s.N, _ = merge(t, s.N, state.Delta(1.5))
	s.M, _ = merge(t, s.M, state.Entries(map[string]int{"k": 1}))
	var r state.Reduced[string, joinWords]
	r.Update("hi")
	s.R, _ = merge(t, s.R, r)
	s.Ms, _ = merge(t, s.Ms, state.Msgs(sampleMessages()...))

	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back S
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, s.V.Get(), back.V.Get())
	require.Equal(t, s.A.Get(), back.A.Get())
	require.Equal(t, s.N.Get(), back.N.Get())
	require.Equal(t, s.M.Get(), back.M.Get())
	require.Equal(t, s.R.Get(), back.R.Get())
	if diff := cmp.Diff(s.Ms.List(), back.Ms.List(), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("messages changed in the round trip (-want +got):\n%s", diff)
	}
	require.Equal(t, "weather", back.Ms.List()[2].ToolCalls()[0].FunctionCall.Name)
}

func TestPendingWritesRoundTripThroughJSON(t *testing.T) {
	var w state.Messages
	w.Append(state.Human("a"))
	w.Remove("x")
	b, err := w.Channel().MarshalWrite()
	require.NoError(t, err)
	var back state.Messages
	require.NoError(t, back.Channel().UnmarshalWrite(b))
	b2, err := back.Channel().MarshalWrite()
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(b2))
}

func FuzzMessageJSONRoundTrip(f *testing.F) {
	f.Add("hi", "call", "tool", `{"a":1}`, "result", []byte{1, 2})
	f.Fuzz(func(t *testing.T, text, callID, name, args, result string, data []byte) {
		for _, s := range []string{text, callID, name, args, result} {
			if !utf8.ValidString(s) {
				t.Skip("JSON carries only valid UTF-8 text")
			}
		}
		m := state.Message{ID: callID + "x", Name: name, MessageContent: llms.MessageContent{
			Role: llms.ChatMessageTypeAI,
			Parts: []llms.ContentPart{
				llms.TextContent{Text: text},
				state.ToolCall(callID, name, args),
				llms.ToolCallResponse{ToolCallID: callID, Name: name, Content: result},
				llms.BinaryContent{MIMEType: "application/octet-stream", Data: data},
			},
		}}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		var back state.Message
		require.NoError(t, json.Unmarshal(b, &back))
		if diff := cmp.Diff(m, back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the message (-want +got):\n%s", diff)
		}
	})
}

// FuzzMessagesReducer checks add_messages invariants on random operation
// sequences: ids stay unique, a removed id is gone unless re-added later,
// and the result never aliases the input.
func FuzzMessagesReducer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var base state.Messages
		base, err := merge(t, base, state.Msgs(msg("a", "0"), msg("b", "0")))
		require.NoError(t, err)
		present := map[string]bool{"a": true, "b": true}
		var w state.Messages
		want := map[string]bool{"a": true, "b": true}
		removedUnknown := false
		for i, op := range ops {
			id := string(rune('a' + op%5))
			switch op % 3 {
			case 0:
				w.Append(msg(id, string(rune('0'+i%10))))
				present[id] = true
				want[id] = true
			case 1:
				if !present[id] {
					removedUnknown = true
				}
				w.Remove(id)
				want[id] = false
			case 2:
				if op%7 == 0 {
					w.RemoveAll()
					present = map[string]bool{}
					want = map[string]bool{}
					removedUnknown = false
				}
			}
		}
		before := ids(base.List())
		got, err := merge(t, base, w)
		require.Equal(t, before, ids(base.List()), "the input must not change")
		if removedUnknown {
			require.Error(t, err)
			return
		}
		if err != nil {
			var ue *state.UnknownMessageError
			require.True(t, errors.As(err, &ue))
			return
		}
		seen := map[string]bool{}
		for _, m := range got.List() {
			require.False(t, seen[m.ID], "duplicate id %s", m.ID)
			seen[m.ID] = true
			require.True(t, want[m.ID], "id %s should be gone", m.ID)
		}
		for id, ok := range want {
			if ok {
				require.True(t, seen[id], "id %s missing", id)
			}
		}
	})
}

func TestAppendForksFromOneBaseDoNotShareWrites(t *testing.T) {
	base, err := merge(t, state.Append[int]{}, state.Items(1, 2, 3))
	require.NoError(t, err)
	left, err := merge(t, base, state.Items(10))
	require.NoError(t, err)
	right, err := merge(t, base, state.Items(20))
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, base.Get())
	require.Equal(t, []int{1, 2, 3, 10}, left.Get())
	require.Equal(t, []int{1, 2, 3, 20}, right.Get())
	again, err := merge(t, left, state.Items(11))
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 10, 11}, again.Get())
	require.Equal(t, []int{1, 2, 3, 20}, right.Get())
}

func TestAppendConcurrentForksAreRaceFree(t *testing.T) {
	base, err := merge(t, state.Append[int]{}, state.Items(1, 2, 3))
	require.NoError(t, err)
	results := make([][]int, 8)
	done := make(chan struct{})
	for i := range results {
		go func() {
			defer func() { done <- struct{}{} }()
			w := state.Items(100 + i)
			cur := base
			_ = cur.Channel().MergeWrites([]state.Channel{w.Channel()})
			results[i] = cur.Get()
		}()
	}
	for range results {
		<-done
	}
	for i, r := range results {
		require.Equal(t, []int{1, 2, 3, 100 + i}, r)
	}
}

func TestOverwriteWithNilSurvivesTheWriteRoundTrip(t *testing.T) {
	var w state.Append[int]
	w.Overwrite(nil)
	b, err := w.Channel().MarshalWrite()
	require.NoError(t, err)
	var back state.Append[int]
	require.NoError(t, back.Channel().UnmarshalWrite(b))
	cur, _ := merge(t, state.Append[int]{}, state.Items(1, 2))
	cur, err = merge(t, cur, back)
	require.NoError(t, err)
	require.Empty(t, cur.Get())
}

// valueJSON is what Value[T] encodes for v, next to encoding/json's answer.
func valueJSON[T any](t *testing.T, v T) (got, want string) {
	t.Helper()
	var f state.Value[T]
	require.NoError(t, f.UnmarshalJSON(mustMarshal(t, v)))
	g, err := f.MarshalJSON()
	require.NoError(t, err)
	return string(g), string(mustMarshal(t, f.Get()))
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestValueMarshalJSONMatchesEncodingJSON(t *testing.T) {
	check := func(name, got, want string) {
		t.Run(name, func(t *testing.T) { require.Equal(t, want, got) })
	}
	for _, v := range []int{0, 1, -1, 1 << 62, -1 << 63} {
		got, want := valueJSON(t, v)
		check("int "+want, got, want)
	}
	got, want := valueJSON(t, uint64(1<<64-1))
	check("uint64 max", got, want)
	got, want = valueJSON(t, int32(-7))
	check("int32", got, want)
	got, want = valueJSON(t, true)
	check("bool", got, want)
	for _, s := range []string{"", "plain words", "quote \" in", `back\slash`, "<html>&amp;", "tab\there", "é ü", "\u2028", "\x7f"} {
		got, want := valueJSON(t, s)
		check("string "+want, got, want)
	}
	got, want = valueJSON(t, 1.5e300)
	check("float (encoding/json)", got, want)
}

func FuzzValueStringJSON(f *testing.F) {
	f.Add("hello")
	f.Add("<\"\\\x00é")
	f.Fuzz(func(t *testing.T, s string) {
		got, want := valueJSON(t, s)
		require.Equal(t, want, got)
	})
}
