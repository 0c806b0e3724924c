// Package deltas stores the successive versions of a channel value so that
// a list which only grows costs storage in proportion to what was appended,
// while reading any version stays cheap.
//
// A stored version is a [Blob]: either the whole value, or a delta that
// names a base version and holds the bytes that follow the base's last
// element. Deltas are used when the new value is a JSON array whose bytes
// start with those of the previous stored version of the channel up to its
// closing bracket, followed by more elements (an append): the new value is
// then base[:len(base)-1] + delta, byte for byte.
//
// Each blob records the size and SHA-256 of the whole value, so a saver
// decides whether a new value appends to the previous one from the new
// value and that blob's metadata, without reading the previous value back.
//
// Deltas are skip deltas: the delta at depth d (its distance from the last
// whole value) is taken against the version at depth d − f^L, where f^L is
// the largest power of the fanout f dividing d. Reading a version therefore
// walks at most (f−1) blobs per level, ⌈log_f n⌉ levels for a run of n
// appends, and each appended element is stored once per level, so a list
// that grows by n elements costs O(n·log_f n) bytes instead of the O(n²) of a
// copy per version. With the default fanout of 16 a run of 4,095 appends
// reads at most 45 blobs and stores each element about three times.
package deltas
