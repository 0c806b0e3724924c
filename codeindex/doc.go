// Package codeindex is a code index for retrieval by agents: it chunks a
// directory tree by definition, and answers keyword, vector and hybrid
// searches with file spans and symbols.
//
// # Chunks
//
// Go files are parsed with go/parser and split into one chunk per top-level
// declaration — functions, methods and types with their doc comments, const
// and var declarations, and the package clause with its imports — each with
// its file, line span and a symbol such as "http.(*Server).Serve". Other text
// files are split into overlapping windows of lines. Binary files, files
// over a size limit, the index folder and the folders .git, .hg, .svn,
// vendor, node_modules, .coderag and (unless [WithTestdata]) testdata are
// skipped.
//
// Python files are parsed with tree-sitter (github.com/tree-sitter/go-tree-sitter
// and the tree-sitter-python grammar, through cgo) by [ChunkPython]: one
// chunk per top-level function, class header and method, with decorators,
// docstring and the comments right above, symbols named as Python imports
// them from the indexed root ("geom.shapes.Circle.area" for method area of
// class Circle in geom/shapes.py), and the code outside definitions in
// [KindModule] chunks. A Python function, method or class has a head
// ([Chunk].Head) as a Go definition has: the comments right above it, its
// decorators, its def or class line(s) up to the colon and its docstring.
// A Python file with a syntax error is chunked by lines, as a Go file that
// does not parse is.
//
// JavaScript and TypeScript files (.js, .jsx, .mjs, .cjs, .ts, .mts, .cts,
// .tsx) are parsed with tree-sitter too, with the tree-sitter-javascript
// and tree-sitter-typescript grammars, by [ChunkJavaScript]: one chunk per
// top-level function declaration, const, let or var bound to an arrow
// function or function expression, CommonJS export of one, class header
// and method (fields bound to arrow functions included) and, in TypeScript,
// interface, type alias and enum, each with "export", its decorators and
// the JSDoc or comments right above it, and with a head that runs to the
// line where its body starts; symbols are module-qualified as in Python
// ("src.geom.shapes.Circle.area" for src/geom/shapes.ts, [JSModule]). The
// rest of the file is [KindModule] chunks, and a file with a syntax error
// is chunked by lines.
//
// # Keyword search
//
// Keyword search is BM25 over the chunks' content, symbol and path, with a
// code-aware analyzer ([Tokens]) that splits camelCase, PascalCase,
// snake_case, paths and dotted names and keeps whole identifiers as well. It
// runs on bleve v2 (github.com/blevesearch/bleve/v2): a maintained pure-Go
// engine with BM25 scoring, custom analyzers, batched updates and deletes by
// document ID (which incremental indexing needs) and an on-disk index that
// reopens in well under a millisecond; it needs no cgo and no server.
//
// A Go function, method or type also has its head — its doc comment and
// its declaration up to the opening brace — in a field of its own, and so
// does a Python function, method or class (its def or class line(s) and
// docstring, with its decorators and the comments above it) and a
// JavaScript or TypeScript definition: what a
// definition is for is said there, while its body, also indexed, says how,
// in words that outnumber those. A query word in the head counts in both
// fields, and three times as much in the head as in the body (a field
// weight, as BM25F gives one; see evaluation/README.md). BM25's collection statistics are counted over the whole index
// once after each change (and kept in the index folder), not summed per
// bleve segment as bleve does by default, so a score does not depend on how
// the index's segments happen to be merged; hits of equal score are ordered
// by chunk ID.
//
// A keyword or hybrid search also asks for the terms a term model puts
// beside the query's ([WithExpansion], [WithTermModel]): [Index.Update]
// trains it on the indexed files themselves — latent semantic analysis,
// a truncated SVD (128 dimensions) of the definitions × terms matrix — so
// that the words of doc comments and the identifier parts used beside
// them in the same definitions get close vectors, on any repository and
// without a network or a shipped model. Each query term brings its two
// nearest terms (cosine at least 0.5), weighted 0.3. The model is
// deterministic, kept in the index folder (26 MB for GOROOT/src), read on
// the first search that needs it, and trained again when a quarter of the
// files have changed; training reads the files once more (about 15 s of
// an index build of GOROOT/src, 1.6 s for a repository of 1,200 files).
//
// The model's space also ranks. Every file gets a vector of the terms of
// its path and line comments, and a query one of its own terms: the file
// ranking below adds each file's cosine to its BM25 score
// ([WithLatentFileWeight]), and the 50 best chunks of a search add
// theirs, from their symbol and text ([WithLatentChunkWeight]), so that
// a file or a definition that speaks of what a question asks, in the
// repository's words for it, comes up where it shares few of the
// question's own.
//
// Update also tunes a copy of the term vectors on the repository's own
// doc comments: each definition whose doc comment has at least four
// terms is a pair of prose and code, and the vectors are trained so that
// a doc comment's pooled vector is nearest to its own definition's code
// among a batch of others (a bag-of-terms dual encoder, in-batch softmax,
// 3 epochs, deterministic; 4.5 s for GOROOT/src's 29,886 pairs). With
// [WithTunedChunks] the 50 best chunks are compared with the question
// through the tuned vectors, by default (see evaluation/README.md, eighth
// round); with [WithChunkCode], also by default, each is compared both
// by its whole text and by its code without its doc comment, as the
// tuned vectors were trained (ninth round).
//
// A long question (more than six distinct terms the model knows) also
// weighs the breadth of each of those 50 chunks' match
// ([WithCoverageWeight]): the share of its distinct terms, by idf, that
// the chunk contains, which BM25's per-term sum does not reward.
//
// With [WithMaxSim], by default, those 50 chunks are also ranked by late
// interaction (MaxSim): each of the question's distinct terms is matched
// with the chunk's term of nearest LSA vector, and the chunk scores the
// idf-weighted mean of those cosines — a soft coverage that keeps each
// of a long question's specific words, which its one pooled vector
// dilutes (see evaluation/README.md, tenth round).
//
// Every file is also a document of its own, its path and whole text,
// and a keyword or hybrid search ranks the files first ([WithFileWeight]):
// the chunks of the best 50 files join the keyword ranking even below its
// cut (and the best chunk of each of the 3 best files that has none among
// them, [WithTopFiles]), each chunk's score gets a share of its file's, and at most 3 of
// the first 5 hits come from one file. Questions that
// say what code does, in words its comments, names and strings spread
// over one file, find that file where no single chunk matches them.
// A file document also has a field of its path and comments alone, and
// for a long question (as for the coverage) the files ranked by BM25
// over their comments join the file ranking ([WithCommentWeight]): prose
// matched against the code's prose, which its identifiers and literals
// outnumber in the whole text.
//
// # Vector search
//
// Vectors come from an [Embedder]. The default is the offline
// [HashingEmbedder], which needs no model: it hashes the analyzer's tokens
// and their character trigrams into a fixed-dimension vector. It is a
// lexical baseline, not a semantic model; plug in a model-backed Embedder for
// meaning. A chunk is embedded with its symbol and path and, for a Go,
// Python, JavaScript or TypeScript definition, its head alone: a whole body's
// tokens (err, nil, self, i, the helpers it calls) dilute a vector of what
// the code is for.
// Vectors are kept in a flat (exact, brute-force) cosine index in
// one file beside the keyword index. A flat index was chosen over
// chromem-go, measured on this machine: chromem-go is brute force too (no
// ANN index), writes one file per document (1,001 files for 1,000 chunks)
// and took 29 ms to reopen 1,000 vectors, where one flat file is read
// sequentially and only when a vector search first needs it, so opening
// the index for keyword search costs nothing.
//
// # Hybrid search
//
// Hybrid search, the default [Mode], runs both searches side by side and
// fuses their rankings. By default ([FuseMNZ]) each ranking's scores are
// min-max normalised over its candidates, added with the weights of
// [WithWeights], and the sum multiplied by the number of rankings that
// returned the chunk (CombMNZ): normalised scores keep how far ahead a hit
// is, and a chunk both rankings found passes one that only one of them
// likes as much. [WithFusion]([FuseMinMax]) leaves out the multiplication;
// [WithFusion]([FuseRRF]) uses reciprocal rank fusion instead, where a
// chunk at rank r of a ranking of weight w scores w/(k+r) ([WithRRFK]).
// Chunks of test files rank after the others unless the query mentions
// tests ([WithTestsLast]): tests repeat the identifiers of the code they
// test, and outnumber it. The evaluation in codeindex/evaluation measures
// what these choices give on questions over Go's own source, on the
// question set they were developed with and on two held-out sets over
// other packages (its README says how they were kept apart): with only
// each set's packages indexed, hybrid puts the answering function in the
// top 5 for 87 %, 96 % and 89 % of the questions (BM25 81 %, 88 %, 94 %;
// vector 85 %, 73 %, 78 %; before the file ranking); with the whole of
// GOROOT/src indexed, for 77 %, 81 % and 83 % (70 %, 69 % and 56 %
// without the file ranking). Run it with
//
//	go run ./codeindex/cmd/coderag-eval [-corpus packages] [-set codeindex/evaluation/testdata/holdout.json]
//
// By default that command indexes the whole of GOROOT/src and asks every
// set of it, including two sets of long, descriptive questions written in
// another voice, on which codeindex finds the answering function in its
// top 5 for 34 % of the 76 questions of the first (9 % without the file
// ranking) and 47 % of the 58 of the second, held out from every choice
// (35 % without the latent rankings, 33 % without the term model either;
// see evaluation/README.md).
//
// On the whole of GOROOT/src (go run ./codeindex/cmd/coderag-scale, on a
// shared 2-core machine): about 18 s to index 99,000 chunks in 540 MB,
// 0.25 s to re-index after one changed file, and a hybrid query p50 of
// 15 ms and p95 of 19 ms before the file ranking, which about doubles
// the p95 (see evaluation/README.md). A question's keyword query leaves out English
// stop words (the index keeps them): they match nearly every chunk and
// weigh almost nothing in the ranking.
//
// # Storage and incremental indexing
//
// The index lives in a folder, root/.coderag by default ([WithDir]): the
// bleve index, the vector file and a manifest of each file's SHA-256 and
// chunk spans. The vector file keeps the vectors in one block, and is
// mapped into memory (on unix) rather than read, on the first vector
// search: a process that opens a large index to ask one question does not
// read all of it. The manifest is a compact binary file with a checksum,
// read at once and decoded in one pass when the index is opened.
// [Index.Update] skips files whose hash is unchanged, re-chunks
// changed ones, adds new ones and removes deleted ones; the manifest is
// written last, so an interrupted Update is redone by the next one.
//
// # Call graph
//
// [LoadCallGraph] loads the Go packages of a module with
// golang.org/x/tools/go/packages, builds SSA and a call graph by class
// hierarchy analysis (see [CallGraph] for why CHA), and answers
// [CallGraph.Callers] and [CallGraph.Callees] with file:line and the
// enclosing named function, using the same symbols as the chunks. Packages
// that do not compile are left out and named by [CallGraph.LoadErrors],
// the others still answer; a dynamic call with no possible target among
// the loaded packages is listed as [Call].Unresolved, not dropped.
//
// For Python, [PythonCalls] builds a [NameCallGraph] from tree-sitter
// syntax alone: each call is resolved by the last component of the called
// name to the functions, methods and classes so named under the root, with
// self.f() inside a class going to that class's f. Without types or imports
// this is approximate — it both invents and misses calls — so its answers
// are [NameCall]s marked Approximate, and calls that match no definition
// (builtins, libraries) are kept as unresolved. [JSCalls] does the same for
// JavaScript and TypeScript, with this.f() in place of self.f() and new C()
// as a call of class C.
package codeindex
