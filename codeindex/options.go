package codeindex

import (
	"fmt"
	"math"
)

// DefaultDir is the index folder, relative to the indexed root, when
// [WithDir] is not given.
const DefaultDir = ".coderag"

// Defaults of the line chunker and of the file walk.
const (
	DefaultLineWindow  = 60
	DefaultLineOverlap = 10
	DefaultMaxFileSize = 1 << 20
)

// An Option configures [Open].
type Option func(*config)

type config struct {
	dir             string
	rebuild         bool
	embedder        Embedder
	window, overlap int
	maxFileSize     int64
	testdata        bool
	progress        func(Progress)
	termDim         int
}

func defaultConfig() config {
	return config{
		embedder:    NewHashingEmbedder(DefaultHashingDim),
		window:      DefaultLineWindow,
		overlap:     DefaultLineOverlap,
		maxFileSize: DefaultMaxFileSize,
		termDim:     DefaultTermModelDim,
	}
}

// WithDir stores the index in dir instead of root/.coderag. A relative dir is
// taken relative to the indexed root.
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithEmbedder sets the embedder of vector search; the default is the
// offline [HashingEmbedder]. Changing the embedder of an existing index makes
// the next [Index.Update] re-embed every file.
func WithEmbedder(e Embedder) Option { return func(c *config) { c.embedder = e } }

// WithLineWindow sets the window and overlap, in lines, of the chunks of
// files that are not Go (defaults DefaultLineWindow and DefaultLineOverlap).
func WithLineWindow(window, overlap int) Option {
	return func(c *config) { c.window, c.overlap = window, overlap }
}

// WithMaxFileSize skips files larger than n bytes (default
// DefaultMaxFileSize).
func WithMaxFileSize(n int64) Option { return func(c *config) { c.maxFileSize = n } }

// WithTestdata indexes testdata directories too; by default they are skipped,
// as vendor, node_modules and version-control folders always are.
func WithTestdata(include bool) Option { return func(c *config) { c.testdata = include } }

// WithTermModel sets the dimension of the term model that [Index.Update]
// trains on the indexed files (default [DefaultTermModelDim]; 0: none).
// The model is latent semantic analysis: a truncated SVD of the matrix
// of the index's definitions (Go, Python, JavaScript and TypeScript; doc
// comment, declaration and body) by their terms, so that a word of doc
// comments and the identifier parts it is used beside get close vectors.
// A keyword or hybrid search adds to its query the terms nearest to the
// query's ([WithExpansion]), so a question in the words of comments also
// finds code that uses the identifiers those words go with. The model is
// kept in the index folder and is trained by the first Update, again
// when a quarter of the files have been added, changed or removed since,
// and when the dimension changes; training reads every file once more
// (about 15 s and 210 MB more at the peak for the 6,372 files of
// GOROOT/src). It is deterministic: the same files give the same model.
// The model has at most one dimension per 8 terms and per 8 definitions
// and none below 4, so a tree of fewer than about 32 definitions gets no
// model and its searches are not expanded.
func WithTermModel(dim int) Option { return func(c *config) { c.termDim = dim } }

// WithRebuild makes Open delete what the index folder holds, once it
// holds the folder's lock and before it reads anything there, so that
// the next Update indexes every file again: the way out of a damaged
// index (a truncated manifest, garbage in the vector or keyword files).
func WithRebuild() Option { return func(c *config) { c.rebuild = true } }

// WithProgress calls fn after each file [Index.Update] looks at, from the
// goroutine that called Update.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }

func (c *config) validate() error {
	switch {
	case c.embedder == nil:
		return &OptionError{Option: "WithEmbedder", Reason: "embedder is nil"}
	case c.window < 1:
		return &OptionError{Option: "WithLineWindow", Reason: fmt.Sprintf("window %d is not positive", c.window)}
	case c.overlap < 0 || c.overlap >= c.window:
		return &OptionError{Option: "WithLineWindow", Reason: fmt.Sprintf("overlap %d is not in [0, window)", c.overlap)}
	case c.maxFileSize < 1:
		return &OptionError{Option: "WithMaxFileSize", Reason: fmt.Sprintf("size %d is not positive", c.maxFileSize)}
	case c.termDim < 0:
		return &OptionError{Option: "WithTermModel", Reason: fmt.Sprintf("dimension %d is negative", c.termDim)}
	}
	return nil
}

// Progress reports how far [Index.Update] has come.
type Progress struct {
	Done, Total int    // files looked at so far, files to look at
	Path        string // the file just looked at
}

// Mode selects how [Index.Search] ranks chunks.
type Mode int

// The search modes.
const (
	Hybrid Mode = iota // BM25 and Vector, fused (see [Fusion])
	BM25               // keyword search, BM25 over the code-aware analyzer
	Vector             // cosine similarity of embeddings
)

// String returns "hybrid", "bm25" or "vector".
func (m Mode) String() string {
	switch m {
	case Hybrid:
		return "hybrid"
	case BM25:
		return "bm25"
	case Vector:
		return "vector"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses the String form of a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Hybrid, BM25, Vector} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, &OptionError{Option: "WithMode", Reason: fmt.Sprintf("unknown mode %q (want bm25, vector or hybrid)", s)}
}

// Defaults of [Index.Search].
const (
	DefaultLimit = 10
	// DefaultRRFK is the k of reciprocal rank fusion ([FuseRRF]), the value
	// of the original paper (Cormack et al., 2009).
	DefaultRRFK = 60
	// candidates is how many hits each ranking contributes to a fusion, at
	// least; more when the limit is higher.
	candidates = 50
)

// Fusion selects how a [Hybrid] search merges the BM25 and vector rankings.
type Fusion int

// The fusions.
const (
	// FuseMinMax adds the weighted scores of each ranking after min-max
	// normalisation over its candidates (the best candidate scores 1, the
	// worst 0, and so does a chunk the ranking did not return): a convex
	// combination of normalised scores (CombSUM), which keeps how far ahead
	// a hit is where RRF keeps only its rank. Bruch, Gai and Ingber ("An
	// Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023)
	// found it more accurate than RRF and less sensitive to its parameter.
	FuseMinMax Fusion = iota
	// FuseRRF is reciprocal rank fusion: a chunk at 1-based rank r of a
	// ranking of weight w scores w/(k+r) ([WithRRFK]), summed over
	// rankings. It looks at ranks only.
	FuseRRF
	// FuseMNZ, the default, is CombMNZ (Fox and Shaw, TREC-2, 1994) over
	// min-max normalised scores: the sum of [FuseMinMax] multiplied by the
	// number of rankings (of non-zero weight) that returned the chunk among
	// their candidates. A chunk both rankings found outranks one only a
	// single ranking scores as high; Lee ("Analyses of Multiple Evidence
	// Combination", SIGIR 1997) found this combination of min-max
	// normalisation and CombMNZ the best of the Comb family. On
	// codeindex's evaluation (codeindex/evaluation) it puts the answering
	// function in the top 5 for 82 of 91 questions in three sets, against
	// 80 for FuseMinMax and 79 for FuseRRF, and no set does worse.
	FuseMNZ
)

// String returns "minmax", "rrf" or "mnz".
func (f Fusion) String() string {
	switch f {
	case FuseMNZ:
		return "mnz"
	case FuseMinMax:
		return "minmax"
	case FuseRRF:
		return "rrf"
	}
	return fmt.Sprintf("Fusion(%d)", int(f))
}

// ParseFusion parses the String form of a Fusion.
func ParseFusion(s string) (Fusion, error) {
	for _, f := range []Fusion{FuseMNZ, FuseMinMax, FuseRRF} {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, &OptionError{Option: "WithFusion", Reason: fmt.Sprintf("unknown fusion %q (want mnz, minmax or rrf)", s)}
}

// A SearchOption configures [Index.Search].
type SearchOption func(*searchConfig)

type searchConfig struct {
	mode                  Mode
	limit                 int
	k                     float64
	bm25Weight, vecWeight float64
	fusion                Fusion
	testsLast             bool
	fileWeight            float64
	latentFileWeight      float64
	latentChunkWeight     float64
	coverageWeight        float64
	commentWeight         float64
	expansion             float64
	topFiles              int
	tunedChunks           bool
	chunkCode             bool
	maxSim                bool
	fileChunks            bool
}

func defaultSearchConfig() searchConfig {
	return searchConfig{mode: Hybrid, limit: DefaultLimit, k: DefaultRRFK, bm25Weight: 1, vecWeight: 1, fusion: FuseMNZ, testsLast: true, fileWeight: DefaultFileWeight, latentFileWeight: DefaultLatentFileWeight, latentChunkWeight: DefaultLatentChunkWeight, coverageWeight: DefaultCoverageWeight, commentWeight: DefaultCommentWeight, expansion: DefaultExpansionWeight, topFiles: DefaultTopFiles, tunedChunks: DefaultTunedChunks, chunkCode: DefaultChunkCode, maxSim: DefaultMaxSim, fileChunks: DefaultFileChunks}
}

// WithMode selects the ranking (default Hybrid).
func WithMode(m Mode) SearchOption { return func(c *searchConfig) { c.mode = m } }

// WithLimit returns at most n hits (default DefaultLimit).
func WithLimit(n int) SearchOption { return func(c *searchConfig) { c.limit = n } }

// WithFusion selects how a hybrid search merges its rankings (default
// [FuseMNZ]).
func WithFusion(f Fusion) SearchOption { return func(c *searchConfig) { c.fusion = f } }

// WithRRFK sets the k of reciprocal rank fusion (default DefaultRRFK): a hit
// at rank r of a ranking scores weight/(k+r). A smaller k favours the top of
// each ranking. It matters only with [WithFusion]([FuseRRF]).
func WithRRFK(k float64) SearchOption { return func(c *searchConfig) { c.k = k } }

// WithWeights sets the weights of the BM25 and vector rankings in a hybrid
// search, for either [Fusion] (default 1 and 1).
func WithWeights(bm25, vector float64) SearchOption {
	return func(c *searchConfig) { c.bm25Weight, c.vecWeight = bm25, vector }
}

// WithTestsLast ranks the chunks of test files (Go's _test.go files and
// the usual Python, JavaScript and TypeScript conventions) after all other
// chunks among the candidates of a search; it is on by default. A question
// about code is most often answered by the code itself, while its tests
// repeat its identifiers and outnumber it: on the retrieval evaluation over
// GOROOT packages (codeindex/evaluation) this ordering raised hybrid
// recall@5 from 64% to 72%. A query that mentions tests ("test", "testing",
// "benchmark") is ranked without it.
func WithTestsLast(on bool) SearchOption { return func(c *searchConfig) { c.testsLast = on } }

// DefaultFileWeight is the weight of the file ranking in keyword and
// hybrid searches (see [WithFileWeight]).
const DefaultFileWeight = 2.0

// fileCandidates is how many files the file ranking of a search keeps: the
// chunks of other files get no share of a file's score.
const fileCandidates = 50

// WithFileWeight sets how much the file around a chunk counts in a keyword
// or hybrid search (default [DefaultFileWeight]; 0 turns the file ranking
// off). Every file of the index is also a document of the keyword index,
// its path and its whole text, and a search first ranks the files by BM25
// over those documents. The chunks of the best files are then looked for
// in the keyword ranking too, even below its usual cut, and each chunk's
// score (over the best chunk's) gets weight times its file's score (over
// the best file's). Questions that describe what code does in words the
// code spreads over several comments, names and strings of one file find
// that file, and then the definition in it that matches best. So that
// the best file's chunks do not fill the first hits alone, at most 3 of
// the first 5 come from one file. Vector search alone ([Vector]) is not
// changed.
func WithFileWeight(w float64) SearchOption { return func(c *searchConfig) { c.fileWeight = w } }

// DefaultLatentFileWeight is the weight of the latent file ranking in
// keyword and hybrid searches (see [WithLatentFileWeight]).
const DefaultLatentFileWeight = 0.5

// WithLatentFileWeight sets how much the term model's similarity between
// the query and each file counts in the file ranking of a keyword or
// hybrid search (default [DefaultLatentFileWeight]; 0 turns it off; it
// needs the file ranking, [WithFileWeight], on). The term model (see
// [WithTermModel]) gives every file a vector made of the terms of its
// path and its line comments, and the query one made of its own terms:
// a file whose comments use the vocabulary of the question's words (the
// identifier parts and words used beside them in the repository's
// definitions) comes close to it even where it shares few of those words.
// Each file of the ranking scores its BM25 score over the best one's plus
// weight times its cosine over the best cosine, and the 50 best of either
// ranking are kept. The vectors are those of the files when the model was
// trained: a file added or changed since has none until the model is
// trained again. An index without a term model ranks its files by BM25
// alone.
func WithLatentFileWeight(w float64) SearchOption {
	return func(c *searchConfig) { c.latentFileWeight = w }
}

// DefaultLatentChunkWeight is the weight of the latent chunk ranking in
// keyword and hybrid searches (see [WithLatentChunkWeight]).
const DefaultLatentChunkWeight = 0.5

// WithLatentChunkWeight sets how much the term model's similarity between
// the query and each of the 50 best chunks of a keyword or hybrid search
// counts (default [DefaultLatentChunkWeight]; 0 turns it off). Each of
// them gets a vector made of the terms of its symbol and text, as a
// file's is (see [WithLatentFileWeight]), and weight times its cosine with
// the query's vector, over the best cosine among them, times the best
// score of the ranking, is added to its score: among the definitions a
// search found, the one that speaks of what the question speaks of comes
// up. The chunks' text is read from their files under the root; a file
// changed since the last Update adds nothing. An index without a term
// model is ranked without it.
func WithLatentChunkWeight(w float64) SearchOption {
	return func(c *searchConfig) { c.latentChunkWeight = w }
}

// DefaultTunedChunks says whether the latent chunk ranking uses the term
// vectors tuned on the doc comments when [WithTunedChunks] is not given.
// It is on: over the whole of GOROOT/src, hybrid symbol recall@5 rose or
// held on every question set of this package's evaluation and no set
// lost more than one question at recall@5 in either mode; the price is
// two questions of one descriptive set at keyword recall@1 (see
// evaluation/README.md, eighth round).
const DefaultTunedChunks = true

// WithTunedChunks makes the latent chunk ranking (see
// [WithLatentChunkWeight]) compare the query with the best chunks through
// the term vectors tuned on the indexed repository's doc comments instead
// of the LSA ones (default [DefaultTunedChunks]). Every definition with a
// doc comment is a pair of prose and code: the tuned vectors are trained
// so that a doc comment's pooled vector is nearest to its own
// definition's code among others (see tune.go), and a question, prose
// too, comes nearest to the definitions it describes. An index whose term
// model has no tuned vectors (an empty or tiny repository) ranks with the
// LSA ones.
func WithTunedChunks(on bool) SearchOption {
	return func(c *searchConfig) { c.tunedChunks = on }
}

// DefaultChunkCode says whether the latent chunk ranking also compares
// the query with each chunk's code apart from its doc comment when
// [WithChunkCode] is not given. It is on: over the whole of GOROOT/src
// it raised or held hybrid symbol and file recall@5 on every question set
// choices are made on (see evaluation/README.md, ninth round).
const DefaultChunkCode = true

// WithChunkCode makes the latent chunk ranking (see
// [WithLatentChunkWeight]) score each of the best chunks by the mean of
// two cosines with the query: with the chunk's whole text, as before, and
// with its code alone — its symbol, declaration and body, its doc comment
// left out (default [DefaultChunkCode]). The tuned term vectors (see
// [WithTunedChunks]) are trained to bring a doc comment near its own
// definition's code without that comment; a question, prose as a doc
// comment is, is then compared with the chunk as the vectors were
// trained, and a definition whose code does what the question describes
// is not outscored by one whose doc comment merely repeats its words.
// Off, a chunk is compared by its whole text alone.
func WithChunkCode(on bool) SearchOption {
	return func(c *searchConfig) { c.chunkCode = on }
}

// DefaultMaxSim says whether the best chunks are also ranked by the late
// interaction of their terms with the query's when [WithMaxSim] is not
// given. It is on: over the whole of GOROOT/src it raised hybrid symbol
// recall@5 or MRR on every question set choices are made on (see
// evaluation/README.md, tenth round).
const DefaultMaxSim = true

// WithMaxSim makes the latent chunk ranking (see [WithLatentChunkWeight])
// also score the best chunks by late interaction (MaxSim; default
// [DefaultMaxSim]): each of the query's distinct terms is matched with the
// chunk's term whose LSA vector is nearest to its own (the term itself
// when the chunk has it), and the chunk scores the idf-weighted mean of
// those cosines, of its whole text and of its code apart from its doc
// comment (see maxsim.go). The latent chunk ranking pools all of a
// question's terms into one vector, in which a long question's few
// specific words weigh little; the late interaction keeps each of them
// apart. Its share among the best chunks, beside the pooled cosine's, has
// the latent chunk ranking's weight (none when that weight is 0). Off,
// the best chunks are ranked as before.
func WithMaxSim(on bool) SearchOption {
	return func(c *searchConfig) { c.maxSim = on }
}

// DefaultFileChunks says whether the best files' chunks of highest latent
// cosine join a long question's keyword candidates when
// [WithFileChunks] is not given. It is on: over the whole of GOROOT/src
// it raised the share of the descriptive questions whose answering
// definition is among the candidates at all (see evaluation/README.md,
// eleventh round).
const DefaultFileChunks = true

// WithFileChunks makes a keyword or hybrid search of a long question
// (at least 12 distinct terms the term model knows: where the coverage
// counts fully, see [WithCoverageWeight]) add to its keyword candidates, for each of the first 10 files of the
// file ranking, the 2 of its chunks that match the query, are not
// candidates yet, and have the highest cosine with the query in the
// latent chunk ranking's space (see [WithLatentChunkWeight],
// [WithTunedChunks], [WithChunkCode]), each with its keyword score
// (default [DefaultFileChunks]). The file ranking often has the answering
// file among its first while the answering definition, which says the
// question's idea in other words, is not among the keyword candidates:
// no reranking can then bring it up. It is off when the latent chunk
// ranking's weight is 0 or the index has no term model. Off, the
// candidates are those of before.
func WithFileChunks(on bool) SearchOption {
	return func(c *searchConfig) { c.fileChunks = on }
}

// DefaultCoverageWeight is the weight of the coverage of a long query's
// terms in keyword and hybrid searches (see [WithCoverageWeight]).
const DefaultCoverageWeight = 1

// WithCoverageWeight sets how much the breadth of a chunk's match counts
// among the 50 best chunks of a keyword or hybrid search, for a long
// query (default [DefaultCoverageWeight]; 0 turns it off). BM25 sums each
// query term's score on its own, so a chunk that repeats a few of a long
// question's words can outscore one that mentions most of them. Each of
// those chunks gets the share of the query's distinct terms, weighted by
// their idf, that its symbol and text contain; weight times that share,
// times the best score of the ranking, is added to its score. It counts
// only for a query of more than 6 distinct terms the term model knows (a
// question, not a name), fully from 12 on, and not at all in an index
// without a term model (see [WithTermModel]). The chunks' text is read as
// for [WithLatentChunkWeight].
func WithCoverageWeight(w float64) SearchOption {
	return func(c *searchConfig) { c.coverageWeight = w }
}

// DefaultTopFiles is how many of the best files of the file ranking have
// their best chunk among a keyword or hybrid search's candidates (see
// [WithTopFiles]).
const DefaultTopFiles = 3

// WithTopFiles sets how many of the best files of the file ranking
// ([WithFileWeight]) have their best chunk among the keyword candidates
// of a keyword or hybrid search (default [DefaultTopFiles]; 0 turns it
// off). The chunks of the best 50 files join the keyword ranking as the
// 50 best of them all, and a file the question is about can have none
// among those, beaten by chunks of other files that repeat one of its
// words: its share of the file ranking then lifts nothing. So each of
// the first n files that has no chunk among the candidates adds its
// chunk of best keyword score, if any matches. Vector search alone
// ([Vector]) is not changed.
func WithTopFiles(n int) SearchOption { return func(c *searchConfig) { c.topFiles = n } }

// DefaultCommentWeight is the weight of the comment ranking in the file
// ranking of a long question (see [WithCommentWeight]).
const DefaultCommentWeight = 1.0

// WithCommentWeight sets how much the files' comments alone count in the
// file ranking of a keyword or hybrid search for a long question (default
// [DefaultCommentWeight]; 0 turns it off; it needs the file ranking,
// [WithFileWeight], on). Every file document of the keyword index also
// has a field of its path and the text of its line comments (after "//",
// or "#" in a Python file), and the files are ranked by BM25 over it too:
// a question written in prose is matched against the prose of the code,
// where the file's whole text, whose identifiers and literals outnumber
// its comments, buries it. Each file then scores its file score (over the
// best file's) plus weight times its comment score (over the best
// file's), among the 50 best files of either ranking, before the latent
// file ranking ([WithLatentFileWeight]). Like the coverage of the query's
// terms ([WithCoverageWeight]), it counts only for a query of more than 6
// distinct terms the term model knows, fully from 12 on, and not at all
// in an index without a term model (see [WithTermModel]): a short query,
// often a name, is ranked as before. Vector search alone ([Vector]) is
// not changed.
func WithCommentWeight(w float64) SearchOption { return func(c *searchConfig) { c.commentWeight = w } }

// DefaultExpansionWeight is the weight of the terms a keyword or hybrid
// search adds to its query (see [WithExpansion]).
const DefaultExpansionWeight = 0.3

// WithExpansion sets the weight, against the query's own terms, of the
// terms a keyword or hybrid search adds to its query from the index's
// term model (default [DefaultExpansionWeight]; 0 turns the expansion
// off; see [WithTermModel]): for each query term the model knows, the two
// terms nearest to it, if their cosine is at least 0.5. They are asked
// in the definitions' content, head and symbol, not in their paths, and
// the file ranking ([WithFileWeight]) does not use them. Vector search
// alone ([Vector]) is not changed. An index without a term model (built
// with WithTermModel(0), or whose model has not been trained yet) is
// searched without expansion.
func WithExpansion(w float64) SearchOption { return func(c *searchConfig) { c.expansion = w } }

func (c *searchConfig) validate() error {
	switch {
	case c.mode != Hybrid && c.mode != BM25 && c.mode != Vector:
		return &OptionError{Option: "WithMode", Reason: fmt.Sprintf("unknown mode %v", c.mode)}
	case c.limit < 1:
		return &OptionError{Option: "WithLimit", Reason: fmt.Sprintf("limit %d is not positive", c.limit)}
	case c.fusion != FuseMinMax && c.fusion != FuseRRF && c.fusion != FuseMNZ:
		return &OptionError{Option: "WithFusion", Reason: fmt.Sprintf("unknown fusion %v", c.fusion)}
	case c.k < 0:
		return &OptionError{Option: "WithRRFK", Reason: fmt.Sprintf("k %v is negative", c.k)}
	case c.bm25Weight < 0 || c.vecWeight < 0 || c.bm25Weight+c.vecWeight == 0:
		return &OptionError{Option: "WithWeights", Reason: "weights must be non-negative and not both zero"}
	case c.topFiles < 0:
		return &OptionError{Option: "WithTopFiles", Reason: fmt.Sprintf("%d files is negative", c.topFiles)}
	}
	for _, w := range []struct {
		option string
		w      float64
	}{
		{"WithFileWeight", c.fileWeight},
		{"WithLatentFileWeight", c.latentFileWeight},
		{"WithLatentChunkWeight", c.latentChunkWeight},
		{"WithCoverageWeight", c.coverageWeight},
		{"WithCommentWeight", c.commentWeight},
		{"WithExpansion", c.expansion},
	} {
		if w.w < 0 || math.IsNaN(w.w) || math.IsInf(w.w, 0) {
			return &OptionError{Option: w.option, Reason: fmt.Sprintf("weight %v is not a non-negative number", w.w)}
		}
	}
	return nil
}
