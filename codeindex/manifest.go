package codeindex

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// manifestVersion changes whenever the layout of the index folder or the
// meaning of what it stores changes.
const manifestVersion = 6 // 2: the analyzer adds English stems; 3: the keyword index has a head field; 4: Python definitions have heads; 5: JavaScript and TypeScript files are chunked by definition; 6: every file has a file document (see fileDocID)

// errOldVersion is loadManifest's error for a manifest of another version:
// Open then rebuilds the folder (its keyword index was analysed another
// way).
var errOldVersion = errors.New("codeindex: index folder written by another version")

// manifest records what the index holds: per file, its content hash and its
// chunks. It is written last by Update, so it never claims more than the
// keyword and vector indexes hold.
type manifest struct {
	Version  int
	Embedder string // the vector space (see embedderID); "" before any vector
	Files    map[string]*fileEntry
	// TermModel names the term model in termModelFile (see termModelID);
	// "" when there is none. TermsChanged counts the files added, changed
	// or removed since it was trained.
	TermModel    string
	TermsChanged int
}

type fileEntry struct {
	Hash   [32]byte // SHA-256 of the content
	Chunks []chunkMeta
	Terms  int // how many terms the analyzer makes of the file's document (see fileText), for the file ranking's BM25
}

// chunkMeta is a chunk without its content, enough to answer a hit.
type chunkMeta struct {
	ID                 string
	Symbol             string
	Kind               Kind
	StartLine, EndLine int
}

func loadManifest(path string) (*manifest, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &manifest{Version: manifestVersion, Files: map[string]*fileEntry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("codeindex: load manifest: %w", err)
	}
	defer f.Close()
	var m manifest
	if err := gob.NewDecoder(f).Decode(&m); err != nil {
		return nil, &CorruptError{File: path, Err: err}
	}
	if m.Version != manifestVersion {
		return nil, errOldVersion
	}
	if m.Files == nil {
		m.Files = map[string]*fileEntry{}
	}
	return &m, nil
}

func (m *manifest) save(path string) (err error) {
	tmp, err := os.CreateTemp(dirOf(path), ".manifest-*")
	if err != nil {
		return fmt.Errorf("codeindex: save manifest: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := gob.NewEncoder(tmp).Encode(m); err != nil {
		return fmt.Errorf("codeindex: save manifest: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("codeindex: save manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("codeindex: save manifest: %w", err)
	}
	return nil
}

func dirOf(path string) string { return filepath.Dir(path) }
