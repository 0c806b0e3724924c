package codeindex

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
	"go.etcd.io/bbolt"
)

// Names inside the index folder.
const (
	keywordDir   = "keyword"       // the bleve index
	vectorFile   = "vectors.bin"   // the flat vector index
	manifestFile = "manifest.bin"  // per-file hashes and chunk spans (see manifest.encode)
	statsFile    = "bm25stats.gob" // the keyword index's BM25 statistics, a cache (see bm25Stats)

	// legacyManifestFile is the manifest of versions before 7, in gob: a
	// folder that holds it and no manifestFile is rebuilt.
	legacyManifestFile = "manifest.gob"
)

// Field boosts of the keyword query: a match in a definition's name counts
// more than one in its body.
const (
	boostContent = 1.0
	boostHead    = 3.0 // the head of a definition (see head): what it is for, said in the words a question uses
	boostSymbol  = 2.0
	boostPath    = 1.0
)

// flushChunks is how many new chunks Update embeds and indexes at a time.
const flushChunks = 512

// An Index is a code index of one directory tree, stored in a folder: a
// keyword index (bleve, BM25), a flat vector index and a manifest of file
// hashes. Open it with [Open], fill or refresh it with [Index.Update], query
// it with [Index.Search]. Its methods are safe for concurrent use; Update
// excludes searches while it runs.
type Index struct {
	root, dir string
	cfg       config

	lock *os.File // the folder's lock file, held until Close (see lockFolder)

	mu     sync.RWMutex
	closed bool
	kw     bleve.Index
	man    *manifest

	vmu sync.Mutex // guards vec, loaded lazily: keyword search never needs it
	vec *flatIndex

	tmu        sync.Mutex // guards terms and termsTried: the term model is read on first use
	terms      *termModel // the term model (see WithTermModel); nil when there is none
	termsTried bool       // whether terms was read from the folder

	// unsaved: an Update failed after it began to change the index in
	// memory (man, the vectors, the model's file), perhaps before saving
	// it: the next Update saves the vectors and the manifest even when it
	// changes nothing.
	unsaved bool

	smu   sync.Mutex        // guards stats (see bm25Stats)
	stats *search.BM25Stats // nil until read from statsFile by Open or computed by a keyword search
}

// Open opens the index of root, creating an empty one if the index folder
// (root/.coderag unless [WithDir]) holds none. Opening reads the manifest and
// opens the keyword index; the vector file and the term model's are
// mapped (read, where files cannot be mapped) on first use and unmapped
// by Close. Call
// [Index.Update] to index the files, and Close when done. An Index holds
// its folder locked (flock, where the platform has it) from before Open
// looks at it until Close: another Open of the folder, in this process or
// another, fails with a *LockedError after 2 s, and never starts afresh a
// folder whose first Update is still running.
func Open(ctx context.Context, root string, opts ...Option) (*Index, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("codeindex: open: %w", err)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("codeindex: open: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("codeindex: open: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("codeindex: open: %s is not a directory", root)
	}
	dir := cmp.Or(cfg.dir, DefaultDir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("codeindex: open: %w", err)
	}
	lock, err := lockFolder(ctx, dir)
	if err != nil {
		return nil, err
	}
	if cfg.rebuild {
		if err := clearFolder(dir); err != nil {
			lock.Close()
			return nil, err
		}
	}
	ix, err := open(root, dir, cfg)
	if err != nil {
		lock.Close()
		return nil, err
	}
	ix.lock = lock
	return ix, nil
}

// clearFolder deletes what the index folder dir holds but its lock file,
// which the caller holds and others may be waiting on.
func clearFolder(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("codeindex: rebuild: %w", err)
	}
	for _, e := range entries {
		if e.Name() == lockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("codeindex: rebuild: %w", err)
		}
	}
	return nil
}

// open is Open once the folder dir is locked.
func open(root, dir string, cfg config) (*Index, error) {
	ix := &Index{root: root, dir: dir, cfg: cfg}
	manPath := filepath.Join(dir, manifestFile)
	_, statErr := os.Stat(manPath)
	fresh := errors.Is(statErr, fs.ErrNotExist)
	var err error
	ix.man, err = loadManifest(manPath)
	if errors.Is(err, errOldVersion) {
		// Written by an older version of this package: rebuilt from
		// scratch by the next Update, as a folder without a manifest is.
		fresh, ix.man, err = true, newManifest(), nil
		if rerr := os.Remove(manPath); rerr != nil {
			return nil, fmt.Errorf("codeindex: open: %w", rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	kwPath := filepath.Join(dir, keywordDir)
	if fresh {
		// Without a manifest nothing in the folder can be trusted: an
		// earlier first Update may have stopped half-way, or the folder
		// was written by a version whose manifest was legacyManifestFile.
		if err := os.Remove(filepath.Join(dir, legacyManifestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("codeindex: open: %w", err)
		}
		if err := os.RemoveAll(kwPath); err != nil {
			return nil, fmt.Errorf("codeindex: open: %w", err)
		}
		if err := ix.invalidateStats(); err != nil {
			return nil, err
		}
		if err := os.Remove(filepath.Join(dir, vectorFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("codeindex: open: %w", err)
		}
		ix.kw, err = bleve.NewUsing(kwPath, keywordMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, lockConfig())
	} else {
		ix.kw, err = bleve.OpenUsing(kwPath, lockConfig())
	}
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, &LockedError{Dir: dir, Wait: lockWait}
	}
	if err != nil {
		return nil, fmt.Errorf("codeindex: open keyword index: %w", err)
	}
	ix.stats = loadStats(filepath.Join(dir, statsFile))
	return ix, nil
}

// lockWait is how long Open waits for the keyword index's lock, which an
// Index holds until Close: another Index of the folder, in this process or
// another, gets a *LockedError instead of waiting for ever.
const lockWait = 2 * time.Second

// lockConfig returns the runtime configuration of the keyword index: a new
// map at every call, because bleve writes into the map it is given (the
// store's path, create_if_missing, error_if_exists) and copies it over the
// stored configuration when it opens an index. A map shared by all calls
// made an index reopened after another was created open the other's
// store: a LockedError while the other was open, its keyword index once
// it was closed.
func lockConfig() map[string]any { return map[string]any{"bolt_timeout": lockWait.String()} }

// keywordMapping indexes path, symbol and content with the code-aware
// analyzer and scores with BM25.
func keywordMapping() mapping.IndexMapping {
	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = AnalyzerName
		f.Store, f.IncludeTermVectors, f.IncludeInAll, f.DocValues = false, false, false, false
		return f
	}
	kind := bleve.NewKeywordFieldMapping()
	kind.Analyzer = keyword.Name
	kind.Store, kind.IncludeInAll, kind.DocValues = false, false, false

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("path", text())
	doc.AddFieldMappingsAt("symbol", text())
	doc.AddFieldMappingsAt("content", text())
	doc.AddFieldMappingsAt("head", text())
	doc.AddFieldMappingsAt("file", text())     // only in file documents (see fileText)
	doc.AddFieldMappingsAt("comments", text()) // only in file documents (see commentText)
	doc.AddFieldMappingsAt("kind", kind)

	im := bleve.NewIndexMapping()
	im.DefaultMapping = doc
	im.DefaultAnalyzer = AnalyzerName
	im.ScoringModel = index.BM25Scoring
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im
}

// Root returns the absolute path of the indexed directory.
func (ix *Index) Root() string { return ix.root }

// Files returns how many files the index holds: 0 for an index whose
// first Update has not finished (never run, or stopped half-way, when
// Open starts it afresh), as for an empty tree.
func (ix *Index) Files() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.man.Files)
}

// Dir returns the absolute path of the index folder.
func (ix *Index) Dir() string { return ix.dir }

// Close closes the index. It is safe to call more than once.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.vmu.Lock()
	err := ix.vec.close() // searches hold ix.mu: none reads the mapping now
	ix.vmu.Unlock()
	ix.tmu.Lock()
	err = errors.Join(err, ix.terms.close()) // as the vectors' mapping
	ix.terms, ix.termsTried = nil, true
	ix.tmu.Unlock()
	err = errors.Join(err, ix.kw.Close())
	if ix.lock != nil {
		// After the keyword index: the folder is left consistent first.
		err = errors.Join(err, ix.lock.Close())
	}
	if err != nil {
		return fmt.Errorf("codeindex: close: %w", err)
	}
	return nil
}

// vectors returns the vector index, reading it on first use.
func (ix *Index) vectors() (*flatIndex, error) {
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	if ix.vec == nil {
		v, err := loadFlatIndex(filepath.Join(ix.dir, vectorFile))
		if err != nil {
			return nil, err
		}
		ix.vec = v
	}
	return ix.vec, nil
}

// termModel returns the term model, reading it on first use; nil when
// the index has none, or when its file cannot be read or is not the one
// the manifest records (written by an Update that stopped before its
// manifest): searches are then not expanded, and the next Update trains
// the model again.
func (ix *Index) termModel() *termModel {
	ix.tmu.Lock()
	defer ix.tmu.Unlock()
	if !ix.termsTried {
		ix.termsTried = true
		if ix.man.TermModel != "" && ix.cfg.termDim > 0 {
			ix.terms, _ = loadTermModel(filepath.Join(ix.dir, termModelFile), ix.man.TermModel)
		}
	}
	return ix.terms
}

// setTermModel replaces the term model, and releases the mapping of the
// one it replaces (see loadTermModel). The caller holds ix.mu for
// writing: no search uses the model it replaces.
func (ix *Index) setTermModel(m *termModel) {
	ix.tmu.Lock()
	defer ix.tmu.Unlock()
	if ix.terms != m {
		ix.terms.close() // an unmap's error leaves nothing to mend
	}
	ix.terms, ix.termsTried = m, true
}

// Stats summarises what [Index.Update] did.
type Stats struct {
	Files       int // files the index holds afterwards
	Chunks      int // chunks the index holds afterwards
	Unchanged   int // files whose content hash had not changed
	Added       int // files indexed for the first time
	Changed     int // files re-chunked because their content changed
	Removed     int // files dropped: deleted, or now binary or too large
	Skipped     int // files not indexed: binary or larger than the limit
	ParseErrors int // Go, Python, JavaScript and TypeScript files that did not parse, chunked by lines instead
}

// Update brings the index up to date with the files under the root: files
// whose content hash is unchanged are skipped, changed files are re-chunked
// and re-embedded, new files are added and the chunks of deleted files are
// removed. Progress goes to the [WithProgress] callback. If ctx is cancelled
// the work done so far is kept in memory and the next Update resumes it.
func (ix *Index) Update(ctx context.Context) (Stats, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return Stats{}, ErrClosed
	}
	var st Stats
	paths, err := ix.walk()
	if err != nil {
		return st, err
	}
	vec, err := ix.vectors()
	if err != nil {
		return st, err
	}
	// From here on the index in memory may get ahead of its files, until
	// they are saved at the end: an Update that fails on the way leaves
	// the next one to save them, even if it changes nothing.
	behind := ix.unsaved
	ix.unsaved = true
	embID := embedderID(ix.cfg.embedder) + "+" + embedTextVersion
	reembed := ix.man.Embedder != embID
	if reembed {
		vec = newFlatIndex()
		ix.vmu.Lock()
		ix.vec.close()
		ix.vec = vec
		ix.vmu.Unlock()
	}

	u := updater{ix: ix, vec: vec, ctx: ctx}
	seen := make(map[string]bool, len(paths))
	for i, rel := range paths {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("codeindex: update: %w", err)
		}
		if err := ix.updateFile(&u, &st, rel, reembed, seen); err != nil {
			return st, err
		}
		if ix.cfg.progress != nil {
			ix.cfg.progress(Progress{Done: i + 1, Total: len(paths), Path: rel})
		}
	}
	if err := u.flush(); err != nil {
		return st, err
	}
	// Files gone from the tree, or now skipped.
	var gone []string
	for rel := range ix.man.Files {
		if !seen[rel] {
			gone = append(gone, rel)
		}
	}
	slices.Sort(gone)
	if len(gone) > 0 {
		b := ix.kw.NewBatch()
		for _, rel := range gone {
			b.Delete(fileDocID(rel))
			for j := range ix.man.Files[rel].Chunks {
				id := chunkID(rel, j)
				b.Delete(id)
				vec.remove(id)
			}
		}
		if err := ix.invalidateStats(); err != nil {
			return st, err
		}
		if err := ix.kw.Batch(b); err != nil {
			return st, fmt.Errorf("codeindex: update keyword index: %w", err)
		}
		for _, rel := range gone {
			delete(ix.man.Files, rel)
		}
		st.Removed = len(gone)
	}
	saveManifest := u.dirty || len(gone) > 0 || reembed || vec.v1 || behind
	if saveManifest {
		// A version 1 file is rewritten in the current format, which is
		// mapped instead of read on the next Open.
		if err := vec.save(filepath.Join(ix.dir, vectorFile)); err != nil {
			return st, err
		}
		vec.v1 = false
		ix.man.Embedder = embID
	}
	trained, err := ix.updateTermModel(ctx, paths, st.Added+st.Changed+st.Removed)
	if err != nil {
		return st, err
	}
	if saveManifest || trained {
		if err := ix.man.save(filepath.Join(ix.dir, manifestFile)); err != nil {
			return st, err
		}
	}
	ix.unsaved = false
	st.Files = len(ix.man.Files)
	for _, e := range ix.man.Files {
		st.Chunks += len(e.Chunks)
	}
	return st, nil
}

// updateFile looks at one file and stages its chunks if it is new or changed.
// A file removed since the walk is not seen: the index drops it, as any
// file gone from the tree.
func (ix *Index) updateFile(u *updater, st *Stats, rel string, reembed bool, seen map[string]bool) error {
	abs := filepath.Join(ix.root, filepath.FromSlash(rel))
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("codeindex: update: %w", err)
	}
	if fi.Size() > ix.cfg.maxFileSize {
		st.Skipped++
		return nil
	}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("codeindex: update: %w", err)
	}
	if isBinary(data) {
		st.Skipped++
		return nil
	}
	seen[rel] = true
	sum := sha256.Sum256(data)
	old := ix.man.Files[rel]
	switch {
	case old == nil:
		st.Added++
	case old.Hash == sum && !reembed:
		st.Unchanged++
		return nil
	default:
		st.Changed++
	}
	chunks, parsed := ix.chunkFile(rel, data)
	if !parsed {
		st.ParseErrors++
	}
	return u.stage(rel, sum, old, chunks, fileText(rel, data), commentText(rel, data))
}

// chunkFile splits the file rel by definition (Go, Python, JavaScript,
// TypeScript) or else by lines; parsed is false for a file of one of
// those languages that did not parse, chunked by lines instead.
func (ix *Index) chunkFile(rel string, data []byte) (chunks []Chunk, parsed bool) {
	var err error
	switch {
	case strings.HasSuffix(rel, ".go"):
		chunks, err = ChunkGo(rel, data)
	case strings.HasSuffix(rel, ".py"):
		chunks, err = ChunkPython(rel, data, ix.cfg.window, ix.cfg.overlap)
	case jsLanguage(rel) != nil:
		chunks, err = ChunkJavaScript(rel, data, ix.cfg.window, ix.cfg.overlap)
	}
	if chunks == nil {
		chunks = ChunkLines(rel, data, ix.cfg.window, ix.cfg.overlap)
	}
	return chunks, err == nil
}

// updateTermModel trains the term model (see WithTermModel) when the
// index has none, one of another dimension, or one trained before a
// quarter of its files were added, changed or removed (changed counts
// this Update's), and saves it; with WithTermModel(0) it forgets the
// model. It reports whether the manifest must be saved.
func (ix *Index) updateTermModel(ctx context.Context, paths []string, changed int) (bool, error) {
	path := filepath.Join(ix.dir, termModelFile)
	if ix.cfg.termDim == 0 {
		if ix.man.TermModel == "" {
			return false, nil
		}
		ix.setTermModel(nil)
		ix.man.TermModel, ix.man.TermsChanged = "", 0
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("codeindex: remove term model: %w", err)
		}
		return true, nil
	}
	ix.man.TermsChanged += changed
	if m := ix.termModel(); m != nil && trainsAs(ix.man.TermModel, ix.cfg.termDim) && ix.man.TermsChanged*retrainShare <= len(ix.man.Files) {
		if !m.v2 {
			return changed > 0, nil
		}
		// A version 2 file (see encode) is rewritten, not retrained, in
		// the current format, whose floats the next Open uses in place;
		// its ID, a hash of the payload, changes with it.
		data, id := m.encode(ix.cfg.termDim)
		if err := saveTermModel(path, data); err != nil {
			return false, err
		}
		m.v2 = false
		ix.man.TermModel = id
		return true, nil
	}
	m, err := ix.trainTermModel(ctx, paths)
	if err != nil {
		return false, err
	}
	data, id := m.encode(ix.cfg.termDim)
	if err := saveTermModel(path, data); err != nil {
		return false, err
	}
	ix.setTermModel(m)
	ix.man.TermModel, ix.man.TermsChanged = id, 0
	return true, nil
}

// trainTermModel trains a term model on the definitions of the indexed
// files among paths, in their order: each one's symbol and content;
// tunes a copy of its vectors on their doc comments (see tune.go); and
// gives it the vectors of those files (see latent.go).
func (ix *Index) trainTermModel(ctx context.Context, paths []string) (*termModel, error) {
	return ix.trainTermModelWith(ctx, paths, defaultTuning())
}

// trainTermModelWith is trainTermModel with the tuning tc.
func (ix *Index) trainTermModelWith(ctx context.Context, paths []string, tc tuneConfig) (*termModel, error) {
	var c termCounter
	var fc fileTermCounter
	var pc pairCounter
	for _, rel := range paths {
		if ix.man.Files[rel] == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("codeindex: train term model: %w", err)
		}
		data, err := os.ReadFile(filepath.Join(ix.root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the walk: the next Update drops it
		}
		if err != nil {
			return nil, fmt.Errorf("codeindex: train term model: %w", err)
		}
		chunks, _ := ix.chunkFile(rel, data)
		for _, ch := range chunks {
			if ch.Kind != KindLines {
				c.add(ch.Symbol + "\n" + ch.Content)
				pc.add(&c, ch.Symbol, ch.Content)
			}
		}
		fc.add(rel, data)
	}
	docs := len(c.docs)
	m, err := c.train(ctx, defaultTermTraining(ix.cfg.termDim))
	if err != nil {
		return nil, err
	}
	if m.Tuned, err = m.tune(ctx, &c, &pc, docs, tc); err != nil {
		return nil, err
	}
	m.setFiles(&fc)
	return m, nil
}

// fileText is the text of a file's document in the keyword index: its path
// and its whole content, one document per file that the file ranking
// (see [WithFileWeight]) scores with BM25 as if the file were one long
// chunk. A question in the words of what code does is often answered by
// a file whose comments, strings and names together use those words,
// spread over its definitions and the comments between them, when no one
// definition holds more than a few of them.
func fileText(rel string, data []byte) string {
	return rel + "\n" + string(data)
}

// fileDocID is the ID of the file document of the file rel: "rel#file",
// never a chunk's ID, which ends in a number.
func fileDocID(rel string) string { return rel + "#file" }

// updater batches the chunks of new and changed files.
type updater struct {
	ix    *Index
	vec   *flatIndex
	ctx   context.Context
	dirty bool

	files  []stagedFile
	chunks int
}

type stagedFile struct {
	rel    string
	hash   [32]byte
	old    *fileEntry
	chunks []Chunk
	text   string // the file document's text (see fileText)
	notes  string // the file document's comment text (see commentText)
}

func (u *updater) stage(rel string, hash [32]byte, old *fileEntry, chunks []Chunk, text, notes string) error {
	u.files = append(u.files, stagedFile{rel: rel, hash: hash, old: old, chunks: chunks, text: text, notes: notes})
	u.chunks += len(chunks)
	if u.chunks >= flushChunks {
		return u.flush()
	}
	return nil
}

// flush embeds the staged chunks, writes them to both indexes and then
// records the files in the manifest.
func (u *updater) flush() error {
	if len(u.files) == 0 {
		return nil
	}
	texts := make([]string, 0, u.chunks)
	for _, f := range u.files {
		for _, c := range f.chunks {
			texts = append(texts, embedText(c))
		}
	}
	vecs, err := u.ix.cfg.embedder.Embed(u.ctx, texts)
	if err != nil {
		return fmt.Errorf("codeindex: embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("codeindex: embed: embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	b := u.ix.kw.NewBatch()
	entries := make([]*fileEntry, len(u.files))
	k := 0
	for i, f := range u.files {
		if f.old != nil {
			for j := range f.old.Chunks {
				id := chunkID(f.rel, j)
				b.Delete(id)
				u.vec.remove(id)
			}
		}
		terms := 0
		eachToken(f.text, func(string, int, int) { terms++ })
		notes := 0
		eachToken(f.notes, func(string, int, int) { notes++ })
		e := &fileEntry{Hash: f.hash, Chunks: make([]chunkMeta, len(f.chunks)), Terms: terms, CommentTerms: notes}
		if err := b.Index(fileDocID(f.rel), map[string]any{fileField: f.text, commentField: f.notes}); err != nil {
			return fmt.Errorf("codeindex: index %s: %w", f.rel, err)
		}
		for j, c := range f.chunks {
			id := chunkID(f.rel, j)
			e.Chunks[j] = chunkMeta{Symbol: c.Symbol, Kind: c.Kind, StartLine: c.StartLine, EndLine: c.EndLine}
			doc := map[string]any{"path": c.Path, "symbol": c.Symbol, "kind": string(c.Kind), "content": c.Content}
			if c.Head != "" {
				doc["head"] = c.Head
			}
			if err := b.Index(id, doc); err != nil {
				return fmt.Errorf("codeindex: index %s: %w", id, err)
			}
			if err := u.vec.add(id, vecs[k]); err != nil {
				return fmt.Errorf("codeindex: embed %s: %w", id, err)
			}
			k++
		}
		entries[i] = e
	}
	if err := u.ix.invalidateStats(); err != nil {
		return err
	}
	if err := u.ix.kw.Batch(b); err != nil {
		return fmt.Errorf("codeindex: update keyword index: %w", err)
	}
	for i, f := range u.files {
		u.ix.man.Files[f.rel] = entries[i]
	}
	u.files, u.chunks, u.dirty = u.files[:0], 0, true
	return nil
}

// embedTextVersion names what [embedText] gives the embedder; the index
// records it beside the embedder's ID, so a change re-embeds every chunk.
const embedTextVersion = "text-v3" // v2: a Go definition is embedded by its head; v3: so is a Python one

// embedText is what the embedder sees of a chunk: its symbol, its path and
// its content, or for a definition (Go, Python, JavaScript, TypeScript)
// only its head ([Chunk].Head). What a definition is for is said in its
// name, its doc comment or docstring and its signature; its body says
// how, in tokens (err, nil, i, self, its helpers' names) that outnumber and
// dilute the others. So the embedder sees the head alone, and the keyword
// index has it as a field of its own, "head", beside the whole content: a
// query word in the doc comment or signature counts in both. Chunks
// without a head (const and var groups, package clauses, module code,
// line windows) are embedded and indexed whole.
func embedText(c Chunk) string {
	content := c.Content
	if c.Head != "" {
		content = c.Head
	}
	return c.Symbol + "\n" + c.Path + "\n" + content
}

// skipDirs are never descended into.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "vendor": true, "node_modules": true, DefaultDir: true}

// walk lists the regular files under the root, slash-separated and relative
// to it, in lexical order, leaving out skipped folders and the index folder.
func (ix *Index) walk() ([]string, error) {
	var paths []string
	err := filepath.WalkDir(ix.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != ix.root && (skipDirs[d.Name()] || (d.Name() == "testdata" && !ix.cfg.testdata) || p == ix.dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(ix.root, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codeindex: walk %s: %w", ix.root, err)
	}
	return paths, nil
}
