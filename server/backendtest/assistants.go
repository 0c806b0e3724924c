package backendtest

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

// assistant creates an assistant of graph "agent" with the given name
// and metadata, made one millisecond after the previous one.
func (e *env) assistant(name string, md map[string]any) server.AssistantRecord {
	e.t.Helper()
	a, err := e.b.CreateAssistant(e.ctx, server.AssistantRecord{ID: e.id(2), GraphID: "agent", Config: map[string]any{"configurable": map[string]any{"model": "m1"}},
		Context: json.RawMessage(`{"tone":"dry"}`), Metadata: md, Name: name, CreatedAt: e.now.Add(time.Duration(e.n.Load()) * time.Millisecond)}, "")
	require.NoError(e.t, err)
	return a
}

func assistantIDs(as []server.AssistantRecord) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func versionNumbers(as []server.AssistantRecord) []int {
	out := []int{}
	for _, a := range as {
		out = append(out, a.Version)
	}
	return out
}

var assistantCases = []testCase{
	{
		name:        "assistant-create-and-read",
		explanation: "CreateAssistant stores version 1 as given and Assistant reads it back; a second create of the id fails with ErrExists unless do_nothing, which returns the stored one unchanged; an unknown id is ErrNotFound",
		run: func(e *env) {
			desc := "helps"
			in := server.AssistantRecord{ID: e.id(2), GraphID: "agent", Config: map[string]any{"recursion_limit": 5}, Context: json.RawMessage(`{"a":[1,"b"]}`),
				Metadata: map[string]any{"owner": "ann"}, Name: "Ann's", Description: &desc, Version: 7, CreatedAt: e.now}
			got, err := e.b.CreateAssistant(e.ctx, in, "")
			require.NoError(e.t, err)
			read, err := e.b.Assistant(e.ctx, in.ID)
			require.NoError(e.t, err)
			for _, a := range []server.AssistantRecord{got, read} {
				require.Equal(e.t, in.ID, a.ID)
				require.Equal(e.t, "agent", a.GraphID)
				require.Equal(e.t, map[string]any{"recursion_limit": float64(5)}, a.Config)
				require.JSONEq(e.t, `{"a":[1,"b"]}`, string(a.Context))
				require.Equal(e.t, map[string]any{"owner": "ann"}, a.Metadata)
				require.Equal(e.t, "Ann's", a.Name)
				require.Equal(e.t, &desc, a.Description)
				require.Equal(e.t, 1, a.Version, "a new assistant is version 1, whatever the record said")
				require.True(e.t, e.now.Equal(a.CreatedAt), "created_at %v, want %v", a.CreatedAt, e.now)
			}
			dup := in
			dup.Name, dup.Metadata = "mallory", map[string]any{"owner": "mallory"}
			_, err = e.b2.CreateAssistant(e.ctx, dup, "")
			require.ErrorIs(e.t, err, server.ErrExists)
			kept, err := e.b2.CreateAssistant(e.ctx, dup, "do_nothing")
			require.NoError(e.t, err)
			require.Equal(e.t, "Ann's", kept.Name)
			require.Equal(e.t, map[string]any{"owner": "ann"}, kept.Metadata)
			_, err = e.b.Assistant(e.ctx, "00000000-0000-4000-8000-ffffffffffff")
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "search-assistants",
		explanation: "SearchAssistants filters by graph, by a part of the name in any case (no pattern characters) and by metadata containment, newest first, paged, and counts all it selects",
		run: func(e *env) {
			var as []server.AssistantRecord
			for i, name := range []string{"Alpha Writer", "beta writer", "Gamma", "100% sure", "1000 sure"} {
				as = append(as, e.assistant(name, map[string]any{"owner": []string{"ann", "bob"}[i%2], "n": i, "tags": []any{"t", name}}))
			}
			other, err := e.b.CreateAssistant(e.ctx, server.AssistantRecord{ID: e.id(2), GraphID: "other", Name: "Other writer",
				CreatedAt: e.now.Add(time.Hour)}, "")
			require.NoError(e.t, err)
			search := func(q server.AssistantQuery) ([]string, int) {
				e.t.Helper()
				if q.Limit == 0 {
					q.Limit = 100
				}
				out, total, err := e.b.SearchAssistants(e.ctx, q)
				require.NoError(e.t, err)
				return assistantIDs(out), total
			}
			got, total := search(server.AssistantQuery{})
			require.Equal(e.t, []string{other.ID, as[4].ID, as[3].ID, as[2].ID, as[1].ID, as[0].ID}, got, "newest first")
			require.Equal(e.t, 6, total)
			got, _ = search(server.AssistantQuery{GraphID: "agent", Name: "WRITER"})
			require.Equal(e.t, []string{as[1].ID, as[0].ID}, got)
			got, _ = search(server.AssistantQuery{Name: "0%"})
			require.Equal(e.t, []string{as[3].ID}, got, "%% is a character, not a wildcard")
			got, _ = search(server.AssistantQuery{Name: "_"})
			require.Empty(e.t, got, "_ is a character, not a wildcard")
			got, _ = search(server.AssistantQuery{Metadata: map[string]any{"owner": "bob"}})
			require.Equal(e.t, []string{as[3].ID, as[1].ID}, got)
			got, _ = search(server.AssistantQuery{Metadata: map[string]any{"n": 2, "tags": []any{"Gamma"}}})
			require.Equal(e.t, []string{as[2].ID}, got)
			got, total = search(server.AssistantQuery{GraphID: "agent", Limit: 2, Offset: 1})
			require.Equal(e.t, []string{as[3].ID, as[2].ID}, got)
			require.Equal(e.t, 5, total)
			out, total, err := e.b.SearchAssistants(e.ctx, server.AssistantQuery{GraphID: "other"})
			require.NoError(e.t, err)
			require.Empty(e.t, out, "Limit 0 counts only")
			require.Equal(e.t, 1, total)
		},
	},
	{
		name:        "patch-assistant-makes-a-version",
		explanation: "PatchAssistant replaces config, context, name, description and graph when given, merges metadata, and stores the result as the next version; AssistantVersions lists the versions newest first, each as it was; SetLatestAssistantVersion brings one back without renumbering, and the next patch numbers after the highest",
		run: func(e *env) {
			a := e.assistant("first", map[string]any{"k": "v", "keep": 1})
			desc := "second one"
			p, err := e.b2.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{Config: map[string]any{"configurable": map[string]any{"model": "m2"}},
				Metadata: map[string]any{"k": "w", "new": true}, Name: "second", Description: &desc})
			require.NoError(e.t, err)
			require.Equal(e.t, 2, p.Version)
			require.Equal(e.t, "second", p.Name)
			require.Equal(e.t, &desc, p.Description)
			require.Equal(e.t, map[string]any{"configurable": map[string]any{"model": "m2"}}, p.Config)
			require.JSONEq(e.t, `{"tone":"dry"}`, string(p.Context), "a patch without context keeps it")
			require.Equal(e.t, map[string]any{"k": "w", "keep": float64(1), "new": true}, normal(p.Metadata))
			require.True(e.t, a.CreatedAt.Equal(p.CreatedAt), "a patch keeps created_at")
			read, err := e.b.Assistant(e.ctx, a.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, 2, read.Version)
			require.Equal(e.t, "second", read.Name)

			p, err = e.b.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{GraphID: "other", Context: json.RawMessage(`"plain"`)})
			require.NoError(e.t, err)
			require.Equal(e.t, 3, p.Version)
			require.Equal(e.t, "other", p.GraphID)
			require.Equal(e.t, "second", p.Name, "an empty name keeps the name")
			require.JSONEq(e.t, `"plain"`, string(p.Context))

			vs, total, err := e.b2.AssistantVersions(e.ctx, a.ID, nil, 10, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, 3, total)
			require.Equal(e.t, []int{3, 2, 1}, versionNumbers(vs))
			require.Equal(e.t, "first", vs[2].Name)
			require.Equal(e.t, map[string]any{"configurable": map[string]any{"model": "m1"}}, vs[2].Config)
			require.Equal(e.t, "agent", vs[1].GraphID)
			vs, total, err = e.b.AssistantVersions(e.ctx, a.ID, map[string]any{"k": "w"}, 1, 1)
			require.NoError(e.t, err)
			require.Equal(e.t, 2, total, "the versions with k=w")
			require.Equal(e.t, []int{2}, versionNumbers(vs))

			back, err := e.b2.SetLatestAssistantVersion(e.ctx, a.ID, 1)
			require.NoError(e.t, err)
			require.Equal(e.t, 1, back.Version)
			require.Equal(e.t, "first", back.Name)
			require.Equal(e.t, "agent", back.GraphID)
			require.Equal(e.t, map[string]any{"k": "v", "keep": float64(1)}, normal(back.Metadata))
			read, err = e.b.Assistant(e.ctx, a.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, back.Version, read.Version)
			require.Equal(e.t, "first", read.Name)
			p, err = e.b.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{Name: "fourth"})
			require.NoError(e.t, err)
			require.Equal(e.t, 4, p.Version, "after going back to 1, the next version follows the highest")
			require.Equal(e.t, map[string]any{"k": "v", "keep": float64(1)}, normal(p.Metadata), "the patch applies to version 1")

			_, err = e.b.SetLatestAssistantVersion(e.ctx, a.ID, 9)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			missing := "00000000-0000-4000-8000-ffffffffffff"
			_, err = e.b.PatchAssistant(e.ctx, missing, server.AssistantPatch{Name: "x"})
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, _, err = e.b.AssistantVersions(e.ctx, missing, nil, 10, 0)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, err = e.b.SetLatestAssistantVersion(e.ctx, missing, 1)
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
	{
		name:        "concurrent-patches-get-distinct-versions",
		explanation: "patches of one assistant at once, through two instances, each get their own version, numbered without gaps, and every version is listed",
		run: func(e *env) {
			a := e.assistant("racy", nil)
			const n = 8
			got := make([]int, n)
			errs := make([]error, n)
			concurrently(n, func(i int) {
				b := []server.Backend{e.b, e.b2}[i%2]
				p, err := b.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{Metadata: map[string]any{strings.Repeat("k", i+1): i}})
				got[i], errs[i] = p.Version, err
			})
			for _, err := range errs {
				require.NoError(e.t, err)
			}
			slices.Sort(got)
			require.Equal(e.t, []int{2, 3, 4, 5, 6, 7, 8, 9}, got)
			vs, total, err := e.b.AssistantVersions(e.ctx, a.ID, nil, 100, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, n+1, total)
			require.Equal(e.t, []int{9, 8, 7, 6, 5, 4, 3, 2, 1}, versionNumbers(vs))
			read, err := e.b.Assistant(e.ctx, a.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, 9, read.Version)
			require.Len(e.t, read.Metadata, n, "every patch's metadata was merged, none lost")
		},
	},
	{
		name:        "delete-assistant",
		explanation: "DeleteAssistant deletes the assistant and its versions; a second delete is ErrNotFound; the id may then be created again, from version 1; the deleted assistant's runs stay and are still claimed",
		run: func(e *env) {
			a := e.assistant("doomed", nil)
			_, err := e.b.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{Name: "doomed 2"})
			require.NoError(e.t, err)
			th := e.thread(nil)
			r := e.newRun(th.ID, "reject", `{"input":{"x":1}}`)
			r.AssistantID = a.ID
			r, err = e.b.CreateRun(e.ctx, r, nil)
			require.NoError(e.t, err)

			require.NoError(e.t, e.b2.DeleteAssistant(e.ctx, a.ID))
			_, err = e.b.Assistant(e.ctx, a.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			_, _, err = e.b.AssistantVersions(e.ctx, a.ID, nil, 10, 0)
			require.ErrorIs(e.t, err, server.ErrNotFound)
			require.ErrorIs(e.t, e.b.DeleteAssistant(e.ctx, a.ID), server.ErrNotFound)
			_, total, err := e.b.SearchAssistants(e.ctx, server.AssistantQuery{})
			require.NoError(e.t, err)
			require.Zero(e.t, total)

			read, err := e.b.Run(e.ctx, r.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, a.ID, read.AssistantID)
			e.claimRun(r.ID)

			again, err := e.b.CreateAssistant(e.ctx, server.AssistantRecord{ID: a.ID, GraphID: "agent", Name: "reborn", CreatedAt: e.now}, "")
			require.NoError(e.t, err)
			require.Equal(e.t, 1, again.Version)
			vs, _, err := e.b.AssistantVersions(e.ctx, a.ID, nil, 10, 0)
			require.NoError(e.t, err)
			require.Equal(e.t, []int{1}, versionNumbers(vs), "no version of the deleted assistant is left")
			require.Equal(e.t, "reborn", vs[0].Name)
		},
	},
	{
		name:         "second-instance-shares-the-assistants",
		explanation:  "an assistant created on one instance is read, searched, patched and deleted on the other",
		twoInstances: true,
		run: func(e *env) {
			a := e.assistant("shared", map[string]any{"team": "x"})
			read, err := e.b2.Assistant(e.ctx, a.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, "shared", read.Name)
			out, _, err := e.b2.SearchAssistants(e.ctx, server.AssistantQuery{Metadata: map[string]any{"team": "x"}, Limit: 10})
			require.NoError(e.t, err)
			require.Equal(e.t, []string{a.ID}, assistantIDs(out))
			p, err := e.b2.PatchAssistant(e.ctx, a.ID, server.AssistantPatch{Name: "shared 2"})
			require.NoError(e.t, err)
			require.Equal(e.t, 2, p.Version)
			read, err = e.b.Assistant(e.ctx, a.ID)
			require.NoError(e.t, err)
			require.Equal(e.t, "shared 2", read.Name)
			require.NoError(e.t, e.b2.DeleteAssistant(e.ctx, a.ID))
			_, err = e.b.Assistant(e.ctx, a.ID)
			require.ErrorIs(e.t, err, server.ErrNotFound)
		},
	},
}
