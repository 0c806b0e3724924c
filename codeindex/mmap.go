package codeindex

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// A mappedFile is the content of a file, mapped into memory where the
// platform can (mmap_unix.go) and read otherwise.
type mappedFile struct {
	data  []byte
	unmap func() error // nil when data was read
}

// readMapped reads the size bytes of f, for when it cannot be mapped.
func readMapped(f *os.File, size int64) (*mappedFile, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, err
	}
	return &mappedFile{data: data}, nil
}

// openMapped maps the regular file at path (see mapFile). It is opened
// without blocking, so that a FIFO or device there is refused instead of
// waited on.
func openMapped(path string) (*mappedFile, error) {
	f, st, err := openRegular(os.OpenFile, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mapFile(f, st.Size())
}

// openRegular opens name with open (os.OpenFile, or an [os.Root]'s)
// read-only without blocking on a FIFO or device, and returns it with its
// information, or an error when it is not a regular file.
func openRegular(open func(string, int, fs.FileMode) (*os.File, error), name string) (*os.File, fs.FileInfo, error) {
	f, err := open(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file", name)
	}
	return f, st, nil
}

// float32s returns the n little-endian float32s at offset off of the file
// in place, when the machine is little-endian and they are aligned.
func (m *mappedFile) float32s(off, n int) ([]float32, bool) {
	b := m.data[off : off+4*n]
	if !littleEndian || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), true
}

// close unmaps the file; the slices it gave must not be used afterwards.
func (m *mappedFile) close() error {
	if m.unmap == nil {
		return nil
	}
	unmap := m.unmap
	m.unmap, m.data = nil, nil
	return unmap()
}

// littleEndian reports whether the machine stores numbers little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
