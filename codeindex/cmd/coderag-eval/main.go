// Command coderag-eval runs codeindex's retrieval evaluation: it asks the
// labelled question sets of codeindex/evaluation/testdata of an index and
// prints recall@1, recall@5, recall@10 and MRR@10 of bm25, vector (the
// offline hashing embedder) and hybrid search, at symbol and at file
// granularity, for every set separately.
//
// By default the index is of the whole of $(go env GOROOT)/src, tests
// included, as a user would index it, and every set is asked of it
// (-corpus goroot); -corpus packages indexes only each set's own packages,
// the protocol of the first sets. Indexing the whole GOROOT takes about a
// minute of two cores; -index DIR keeps that index between runs.
//
// Usage, from the repository root:
//
//	go run ./codeindex/cmd/coderag-eval [-set FILE,FILE] [-corpus goroot|packages] [-index DIR] [-check] [-fusion mnz|minmax|rrf] [-k K] [-weights BM25,VECTOR] [-tests-last=false] [-file-weight W] [-latent-file-weight W] [-latent-chunk-weight W] [-coverage-weight W] [-comment-weight W] [-top-files N] [-expansion W] [-tuned-chunks] [-term-dim N] [-modes bm25,vector,hybrid] [-v]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/codeindex/evaluation"
)

// sets are the bundled question sets, in report order.
var sets = []string{"questions.json", "holdout.json", "holdout2.json", "descriptive.json", "descriptive2.json", "descriptive3.json", "descriptive4.json", "descriptive5.json", "descriptive6.json", "descriptive7.json", "descriptive8.json", "descriptive9.json"}

type options struct {
	sets        []string
	corpus      string
	index       string
	check       bool
	fusion      codeindex.Fusion
	k           float64
	wb, wv      float64
	testsLast   bool
	fileW       float64
	latentW     float64
	latentCW    float64
	coverageW   float64
	commentW    float64
	topFiles    int
	expansion   float64
	tunedChunks bool
	chunkCode   bool
	maxSim      bool
	fileChunks  bool
	termDim     int
	verbose     bool
}

func main() {
	set := flag.String("set", strings.Join(defaultSets(), ","), "labelled question sets (JSON), comma-separated")
	corpus := flag.String("corpus", "goroot", "what is indexed: goroot (the whole of GOROOT/src, every set) or packages (each set's packages alone)")
	index := flag.String("index", "", "keep the whole-GOROOT index in this folder and reuse it (default: a temporary folder)")
	check := flag.Bool("check", false, "only check that every label names a definition of GOROOT/src, without indexing")
	fusion := flag.String("fusion", codeindex.FuseMNZ.String(), "how hybrid search merges its rankings: mnz, minmax or rrf")
	k := flag.Float64("k", codeindex.DefaultRRFK, "k of reciprocal rank fusion (with -fusion rrf)")
	weights := flag.String("weights", "1,1", "weights of the bm25 and vector rankings in hybrid search")
	testsLast := flag.Bool("tests-last", true, "rank test files' chunks after the others (codeindex.WithTestsLast)")
	fileW := flag.Float64("file-weight", codeindex.DefaultFileWeight, "weight of the file ranking in bm25 and hybrid search (0: off; codeindex.WithFileWeight)")
	latentW := flag.Float64("latent-file-weight", codeindex.DefaultLatentFileWeight, "weight of the term model's latent file ranking beside BM25's in bm25 and hybrid search (0: off; codeindex.WithLatentFileWeight)")
	latentCW := flag.Float64("latent-chunk-weight", codeindex.DefaultLatentChunkWeight, "weight of the term model's latent ranking of the best chunks in bm25 and hybrid search (0: off; codeindex.WithLatentChunkWeight)")
	coverageW := flag.Float64("coverage-weight", codeindex.DefaultCoverageWeight, "weight of the coverage of a long query's terms among the best chunks in bm25 and hybrid search (0: off; codeindex.WithCoverageWeight)")
	commentW := flag.Float64("comment-weight", codeindex.DefaultCommentWeight, "weight of the BM25 ranking of the files' comments in the file ranking of a long question in bm25 and hybrid search (0: off; codeindex.WithCommentWeight)")
	topFiles := flag.Int("top-files", codeindex.DefaultTopFiles, "how many of the best files have their best chunk among the keyword candidates of bm25 and hybrid search (0: off; codeindex.WithTopFiles)")
	maxSim := flag.Bool("max-sim", codeindex.DefaultMaxSim, "also rank the best chunks by the late interaction (MaxSim) of their terms with the query's (codeindex.WithMaxSim)")
	fileChunks := flag.Bool("file-chunks", codeindex.DefaultFileChunks, "add to a long question's keyword candidates the chunks of the best files of highest latent cosine in bm25 and hybrid search (codeindex.WithFileChunks)")
	chunkCode := flag.Bool("chunk-code", codeindex.DefaultChunkCode, "in the latent chunk ranking, compare the query with each chunk's code apart from its doc comment too (codeindex.WithChunkCode)")
	tunedChunks := flag.Bool("tuned-chunks", codeindex.DefaultTunedChunks, "compare the query with the best chunks through the term vectors tuned on the doc comments in the latent chunk ranking (codeindex.WithTunedChunks)")
	expansion := flag.Float64("expansion", codeindex.DefaultExpansionWeight, "weight of the term model's query expansion in bm25 and hybrid search (0: off; codeindex.WithExpansion)")
	termDim := flag.Int("term-dim", codeindex.DefaultTermModelDim, "dimension of the term model of the whole-GOROOT index (-corpus goroot; 0: none; codeindex.WithTermModel); another dimension than the kept index's trains it again")
	verbose := flag.Bool("v", false, "also print the rank of the answering symbol per question")
	modes := flag.String("modes", "bm25,vector,hybrid", "the search modes asked, comma-separated")
	flag.Parse()
	evaluation.Modes = nil
	for _, m := range strings.Split(*modes, ",") {
		mode, err := codeindex.ParseMode(m)
		if err != nil {
			fmt.Fprintln(os.Stderr, "coderag-eval: -modes:", err)
			os.Exit(2)
		}
		evaluation.Modes = append(evaluation.Modes, mode)
	}
	o := options{sets: strings.Split(*set, ","), corpus: *corpus, index: *index, check: *check, k: *k, testsLast: *testsLast, fileW: *fileW, latentW: *latentW, latentCW: *latentCW, coverageW: *coverageW, commentW: *commentW, topFiles: *topFiles, expansion: *expansion, tunedChunks: *tunedChunks, chunkCode: *chunkCode, maxSim: *maxSim, fileChunks: *fileChunks, termDim: *termDim, verbose: *verbose}
	if err := o.parse(*fusion, *weights); err == nil {
		err = run(o)
		if err == nil {
			return
		}
		fmt.Fprintln(os.Stderr, "coderag-eval:", err)
	} else {
		fmt.Fprintln(os.Stderr, "coderag-eval:", err)
	}
	os.Exit(1)
}

// defaultSets finds the bundled question sets from the repository root or
// from the codeindex module.
func defaultSets() []string {
	dir := "codeindex/evaluation/testdata"
	if _, err := os.Stat(dir); err != nil {
		dir = "evaluation/testdata"
	}
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = filepath.Join(dir, s)
	}
	return out
}

func (o *options) parse(fusion, weights string) error {
	var err error
	if o.fusion, err = codeindex.ParseFusion(fusion); err != nil {
		return fmt.Errorf("-fusion: %w", err)
	}
	ws := strings.Split(weights, ",")
	if len(ws) != 2 {
		return fmt.Errorf("-weights %q: want two numbers, bm25,vector", weights)
	}
	if o.wb, err = strconv.ParseFloat(ws[0], 64); err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	if o.wv, err = strconv.ParseFloat(ws[1], 64); err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	if o.corpus != "goroot" && o.corpus != "packages" {
		return fmt.Errorf("-corpus %q: want goroot or packages", o.corpus)
	}
	return nil
}

func run(o options) error {
	ctx := context.Background()
	var loaded []*evaluation.Set
	for _, f := range o.sets {
		s, err := evaluation.LoadSet(f)
		if err != nil {
			return err
		}
		loaded = append(loaded, s)
	}
	goroot, err := evaluation.GOROOTSrc()
	if err != nil {
		return err
	}
	if o.check {
		defs, err := evaluation.Definitions(goroot)
		if err != nil {
			return err
		}
		bad := 0
		for i, s := range loaded {
			answers, unknown := evaluation.Resolve(s, defs)
			for _, u := range unknown {
				fmt.Printf("%s: unknown label %s\n", o.sets[i], u)
			}
			bad += len(unknown)
			fmt.Printf("%s: %d questions, %d acceptable answers, %d packages\n", o.sets[i], len(s.Questions), count(answers), len(packagesOf(answers)))
		}
		if bad > 0 {
			return fmt.Errorf("%d labels name no definition of %s", bad, goroot)
		}
		return nil
	}
	work, err := os.MkdirTemp("", "coderag-eval")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sopts := []codeindex.SearchOption{codeindex.WithFusion(o.fusion), codeindex.WithRRFK(o.k), codeindex.WithWeights(o.wb, o.wv), codeindex.WithTestsLast(o.testsLast), codeindex.WithFileWeight(o.fileW), codeindex.WithLatentFileWeight(o.latentW), codeindex.WithLatentChunkWeight(o.latentCW), codeindex.WithCoverageWeight(o.coverageW), codeindex.WithCommentWeight(o.commentW), codeindex.WithTopFiles(o.topFiles), codeindex.WithExpansion(o.expansion), codeindex.WithTunedChunks(o.tunedChunks), codeindex.WithChunkCode(o.chunkCode), codeindex.WithMaxSim(o.maxSim), codeindex.WithFileChunks(o.fileChunks)}
	fmt.Printf("hybrid: fusion %s (k=%g for rrf), weights bm25=%g vector=%g; file weight %g; latent file weight %g; latent chunk weight %g; coverage weight %g; comment weight %g; top files %d; expansion %g; tuned chunks: %v; chunk code: %v; max sim: %v; file chunks: %v; tests last: %v; MRR over the top %d\n",
		o.fusion, o.k, o.wb, o.wv, o.fileW, o.latentW, o.latentCW, o.coverageW, o.commentW, o.topFiles, o.expansion, o.tunedChunks, o.chunkCode, o.maxSim, o.fileChunks, o.testsLast, evaluation.Limit)

	var corpus *evaluation.Corpus
	if o.corpus == "goroot" {
		dir := o.index
		if dir == "" {
			dir = filepath.Join(work, "goroot.coderag")
		}
		if corpus, err = evaluation.OpenCorpus(ctx, goroot, dir, codeindex.WithTermModel(o.termDim)); err != nil {
			return err
		}
		defer corpus.Close()
		fmt.Printf("corpus: the whole of %s: %d files, %d chunks; open and update took %s (%d files indexed, %d unchanged)\n",
			goroot, corpus.Stats.Files, corpus.Stats.Chunks, corpus.Build.Round(time.Millisecond), corpus.Stats.Added+corpus.Stats.Changed, corpus.Stats.Unchanged)
	}
	for i, s := range loaded {
		fmt.Printf("\n%s", o.sets[i])
		if s.Frozen != "" {
			fmt.Printf(" (frozen %s)", s.Frozen)
		}
		var res []evaluation.Result
		if corpus != nil {
			fmt.Println()
			res, err = corpus.Evaluate(ctx, s, sopts...)
		} else {
			fmt.Printf(", over its GOROOT/src packages alone: %s\n", strings.Join(s.Packages, " "))
			res, _, err = evaluation.Run(ctx, s, goroot, work, sopts...)
		}
		if err != nil {
			return err
		}
		if err := evaluation.WriteTable(os.Stdout, len(s.Questions), res); err != nil {
			return err
		}
		if o.verbose {
			fmt.Println()
			if err := evaluation.WriteRanks(os.Stdout, s, res); err != nil {
				return err
			}
		}
	}
	return nil
}

func count(answers [][]evaluation.Answer) int {
	n := 0
	for _, as := range answers {
		n += len(as)
	}
	return n
}

// packagesOf returns the directories of the answers' files.
func packagesOf(answers [][]evaluation.Answer) map[string]bool {
	pkgs := map[string]bool{}
	for _, as := range answers {
		for _, a := range as {
			pkgs[filepath.Dir(a.File)] = true
		}
	}
	return pkgs
}
