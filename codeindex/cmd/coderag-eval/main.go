// Command coderag-eval runs codeindex's retrieval evaluation: it indexes the
// GOROOT packages of a labelled question set (by default
// codeindex/evaluation/testdata/questions.json) and prints recall@1,
// recall@5 and MRR@10 of bm25, vector (the offline hashing embedder) and
// hybrid search, at symbol and at file granularity.
//
// Usage, from the repository root:
//
//	go run ./codeindex/cmd/coderag-eval [-set FILE] [-fusion mnz|minmax|rrf] [-k K] [-weights BM25,VECTOR] [-tests-last=false] [-v]
//
// -set codeindex/evaluation/testdata/holdout.json (or holdout2.json) asks a
// held-out set, over other packages (see codeindex/evaluation/README.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/codeindex/evaluation"
)

func main() {
	set := flag.String("set", defaultSet(), "labelled question set (JSON)")
	fusion := flag.String("fusion", codeindex.FuseMNZ.String(), "how hybrid search merges its rankings: mnz, minmax or rrf")
	k := flag.Float64("k", codeindex.DefaultRRFK, "k of reciprocal rank fusion (with -fusion rrf)")
	weights := flag.String("weights", "1,1", "weights of the bm25 and vector rankings in hybrid search")
	testsLast := flag.Bool("tests-last", true, "rank test files' chunks after the others (codeindex.WithTestsLast)")
	verbose := flag.Bool("v", false, "also print the rank of the answering symbol per question")
	flag.Parse()
	if err := run(*set, *fusion, *k, *weights, *testsLast, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "coderag-eval:", err)
		os.Exit(1)
	}
}

// defaultSet finds the bundled question set from the repository root or
// from the codeindex module.
func defaultSet() string {
	for _, p := range []string{"codeindex/evaluation/testdata/questions.json", "evaluation/testdata/questions.json"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "codeindex/evaluation/testdata/questions.json"
}

func run(setFile, fusion string, k float64, weights string, testsLast, verbose bool) error {
	fu, err := codeindex.ParseFusion(fusion)
	if err != nil {
		return fmt.Errorf("-fusion: %w", err)
	}
	ws := strings.Split(weights, ",")
	if len(ws) != 2 {
		return fmt.Errorf("-weights %q: want two numbers, bm25,vector", weights)
	}
	wb, err := strconv.ParseFloat(ws[0], 64)
	if err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	wv, err := strconv.ParseFloat(ws[1], 64)
	if err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	s, err := evaluation.LoadSet(setFile)
	if err != nil {
		return err
	}
	goroot, err := evaluation.GOROOTSrc()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "coderag-eval")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	res, _, err := evaluation.Run(context.Background(), s, goroot, work, codeindex.WithFusion(fu), codeindex.WithRRFK(k), codeindex.WithWeights(wb, wv), codeindex.WithTestsLast(testsLast))
	if err != nil {
		return err
	}
	fmt.Printf("GOROOT/src packages: %s\nhybrid: fusion %s (k=%g for rrf), weights bm25=%g vector=%g; tests last: %v; MRR over the top %d\n\n",
		strings.Join(s.Packages, " "), fu, k, wb, wv, testsLast, evaluation.Limit)
	if err := evaluation.WriteTable(os.Stdout, len(s.Questions), res); err != nil {
		return err
	}
	if verbose {
		fmt.Println()
		return evaluation.WriteRanks(os.Stdout, s, res)
	}
	return nil
}
