package codur_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

func TestEachRepairPatternProducesItsFix(t *testing.T) {
	cases := []struct{ pattern, src, fixed string }{
		{"off_by_one_range", "for i in range(1, n):\n", "for i in range(1, n + 1):\n"},
		{"off_by_one_range", "for i in range(len(xs)):\n", "for i in range(len(xs) + 1):\n"},
		{"remove_continue_guard", "for v in vs:\n    if v < 0: continue\n    n += 1\n", "for v in vs:\n\n    n += 1\n"},
		{"remove_continue_guard", "for v in vs:\n    if v < 0:\n        continue\n    n += 1\n", "for v in vs:\n\n    n += 1\n"},
		{"remove_percent_division", "x = p * (1 - d / 100)\n", "x = p * (1 - d )\n"},
		{"range_start", "for i in range(1, n):\n", "for i in range(0, n):\n"},
		{"comparison_boundary", "if a > 90:\n", "if a >= 90:\n"},
		{"comparison_boundary", "if a <= b:\n", "if a < b:\n"},
		{"plus_minus_one", "last = xs[len(xs) - 1]\n", "last = xs[len(xs) ]\n"},
		{"equality_flip", "return n % 2 == 1\n", "return n % 2 != 1\n"},
		{"logic_flip", "if a and b:\n", "if a or b:\n"},
		{"logic_flip", "if (a && b) {\n", "if (a || b) {\n"},
		{"fstring_prefix", "print(\"Hi {name}\")\n", "print(f\"Hi {name}\")\n"},
		{"integer_division", "half = n / 2\n", "half = n // 2\n"},
		{"comprehension_filter", "odd = [x for x in xs if x % 2]\n", "odd = [x for x in xs if not x % 2]\n"},
		{"comprehension_filter", "ev = [x for x in xs if not x % 2]\n", "ev = [x for x in xs if x % 2]\n"},
		{"str_concat", "print(\"Total: \" + total)\n", "print(\"Total: \" + str(total))\n"},
		{"min_max_swap", "best = min(scores)\n", "best = max(scores)\n"},
	}
	patterns := map[string]codur.RepairPattern{}
	for _, p := range codur.DefaultRepairs() {
		patterns[p.Name] = p
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			p, ok := patterns[c.pattern]
			require.True(t, ok)
			var got []string
			for _, cand := range codur.Candidates(c.src, []codur.RepairPattern{p}, 100) {
				got = append(got, cand.Source)
			}
			require.Contains(t, got, c.fixed)
		})
		seen[c.pattern] = true
	}
	require.Len(t, seen, len(patterns), "every pattern has a case")
}

func TestCandidatesTrySinglesBeforeCombinationsWithinBudget(t *testing.T) {
	src := "s = sum(range(1, n))\nt = s * (1 + tax / 100)\n"
	patterns := codur.DefaultRepairs()
	all := codur.Candidates(src, patterns, 10000)
	var firstPair int
	for i, c := range all {
		if strings.Contains(c.Name, "+") {
			firstPair = i
			break
		}
	}
	require.Positive(t, firstPair)
	for _, c := range all[firstPair:] {
		require.Contains(t, c.Name, "+", "no single after the first combination")
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	require.Contains(t, names, "off_by_one_range+remove_percent_division")
	require.Len(t, codur.Candidates(src, patterns, 3), 3)
	require.Empty(t, codur.Candidates(src, patterns, 0))
	seen := map[string]bool{}
	for _, c := range all {
		require.False(t, seen[c.Source], "duplicate candidate %s", c.Name)
		require.NotEqual(t, src, c.Source)
		seen[c.Source] = true
	}
}

func TestReviewRepairsLocallyAndReportsThePattern(t *testing.T) {
	dir, _ := workspace(t, map[string]string{
		"main.py":      "total = 0\nfor i in range(1, 5):\n    total += i\nprint(total)\n",
		"expected.txt": "15\n",
	})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted(preCode, planDelegate, text("no idea"))
	r := run(t, build(t, model, dir, codur.WithVerifier(v)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.True(t, r.out.Verified.Get())
	require.Equal(t, []string{"off_by_one_range"}, r.out.Repairs.Get())
	require.Equal(t, "total = 0\nfor i in range(1, 5 + 1):\n    total += i\nprint(total)\n", readFile(t, dir, "main.py"))
	require.Len(t, r.repairs, 1)
}

func TestFailedRepairSearchRestoresTheProgram(t *testing.T) {
	src := "import sys\nfor i in range(3):\n    print(i)\n"
	dir, _ := workspace(t, map[string]string{"main.py": src, "expected.txt": "never\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted(preCode, planDelegate, text("no idea"))
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithMaxIterations(1)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.False(t, r.out.Verified.Get())
	require.Equal(t, src, readFile(t, dir, "main.py"))
	require.Positive(t, r.repairs[0].Tried)
	require.Empty(t, r.repairs[0].Fixed)
}

func TestHintedRepairsComeFirst(t *testing.T) {
	src := "s = sum(range(1, n))\nt = s * (1 - d / 100)\n"
	first := func(hint string) string {
		return codur.Candidates(src, codur.HintedRepairs(codur.DefaultRepairs(), hint), 1)[0].Name
	}
	require.Equal(t, "off_by_one_range", first(""))
	require.Equal(t, "remove_percent_division", first("The discount is a fraction, not a percentage."))
	require.Equal(t, "off_by_one_range", first("Looks like an off-by-one."))
	names := func(ps []codur.RepairPattern) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	all := codur.DefaultRepairs()
	hinted := codur.HintedRepairs(all, "the parity condition is inverted")
	require.ElementsMatch(t, names(all), names(hinted), "a permutation")
	require.Equal(t, []string{"comparison_boundary", "equality_flip", "logic_flip", "comprehension_filter"}, names(hinted)[:4])
}

func TestRepairLeavesASymlinkedProgramAlone(t *testing.T) {
	outside := t.TempDir()
	target := filepath.Join(outside, "real.py")
	src := "total = 0\nfor i in range(1, 5):\n    total += i\nprint(total)\n"
	require.NoError(t, os.WriteFile(target, []byte(src), 0o644))
	dir, _ := workspace(t, map[string]string{"expected.txt": "15\n"})
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "main.py")))
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	var plan []string
	model := llm.NewScripted(preCode, planDelegate, text("no idea"),
		llm.Reply{Text: `{"action": "done"}`, Expect: func(msgs []state.Message) error {
			for _, m := range msgs {
				plan = append(plan, m.Text())
			}
			return nil
		}})
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithMaxIterations(2)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.False(t, r.out.Verified.Get())
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, src, string(b), "the file behind the link is untouched")
	require.Empty(t, r.repairs, "no repair search on a link")
	require.NotContains(t, strings.Join(plan, "\n"), "Current Implementation", "the linked file is not shown to the model")
}

func FuzzCandidates(f *testing.F) {
	f.Add("for i in range(1, n):\n    if x: continue\n    t = p / 100\n")
	f.Add("range(range(range(")
	f.Add("if a > b and c <= d: print(\"{x}\" + y)\n")
	patterns := codur.DefaultRepairs()
	f.Fuzz(func(t *testing.T, src string) {
		for _, c := range codur.Candidates(src, patterns, 50) {
			if c.Source == src || c.Name == "" {
				t.Fatalf("candidate %q is no change", c.Name)
			}
		}
	})
}

func TestFileOperationsAreNotVerifiedNorRepaired(t *testing.T) {
	src := "print(sum(range(1, 10)))\n"
	dir, _ := workspace(t, map[string]string{"main.py": src, "expected.txt": "55\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted()
	r := run(t, build(t, model, dir, codur.WithVerifier(v)), codur.Input("write 'remember to add tests' to notes.txt", false))
	require.NoError(t, r.err)
	require.Empty(t, r.repairs)
	require.Equal(t, src, readFile(t, dir, "main.py"), "the failing program is left alone")
	require.Equal(t, "remember to add tests", readFile(t, dir, "notes.txt"))
}

func TestRepairSearchRunsInAScratchCopy(t *testing.T) {
	// The program appends each run to a log next to it: the verification
	// and the candidates run in scratch copies, so no run writes the
	// workspace's log.
	src := "with open('runs.log', 'a') as f:\n    f.write('run\\n')\nprint(sum(range(1, 10)))\n"
	dir, _ := workspace(t, map[string]string{"main.py": src, "expected.txt": "55\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted(preCode, planDelegate, text("no idea"))
	r := run(t, build(t, model, dir, codur.WithVerifier(v)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, []string{"off_by_one_range"}, r.out.Repairs.Get())
	require.NoFileExists(t, filepath.Join(dir, "runs.log"), "no run touched the workspace")
	require.Contains(t, readFile(t, dir, "main.py"), "range(1, 10 + 1)")
}

func TestRepairsCanBeReplacedOrTurnedOff(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []codur.Option
		fixed bool
	}{
		{"defaults", nil, true},
		{"no patterns", []codur.Option{codur.WithRepairs()}, false},
		{"no budget", []codur.Option{codur.WithRepairBudget(0)}, false},
		{"only another pattern", []codur.Option{codur.WithRepairs(codur.RepairPattern{Name: "noop", Sites: func(string) []codur.Edit { return nil }})}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := workspace(t, map[string]string{"main.py": "print(sum(range(1, 10)))\n", "expected.txt": "55\n"})
			v, err := codur.DetectVerifier(dir)
			require.NoError(t, err)
			model := llm.NewScripted(preCode, planDelegate, text("no idea"))
			opts := append([]codur.Option{codur.WithVerifier(v), codur.WithMaxIterations(1)}, c.opts...)
			r := run(t, build(t, model, dir, opts...), codur.Input("fix main.py", false))
			require.NoError(t, r.err)
			require.Equal(t, c.fixed, r.out.Verified.Get())
		})
	}
}
