package postgres

import (
	"reflect"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// presized is the first argument of a set-based statement: its value v,
// whose encoding first makes room for n bytes, about what the statement's
// arguments take encoded. pgx encodes a statement's arguments into a
// buffer it drops when it grew past 256 bytes, so that the large arrays of
// a set-based batch otherwise grew it again, by a quarter at a time, at
// every statement.
type presized[T any] struct {
	v T
	n int
}

// presizePlan encodes a presized[T].
type presizePlan[T any] struct{ next pgtype.EncodePlan }

// SetNext implements pgtype.WrappedEncodePlanNextSetter.
func (p *presizePlan[T]) SetNext(next pgtype.EncodePlan) { p.next = next }

// Encode implements pgtype.EncodePlan.
func (p *presizePlan[T]) Encode(value any, buf []byte) ([]byte, error) {
	v := value.(presized[T])
	return p.next.Encode(v.v, slices.Grow(buf, v.n))
}

// tryWrapPresized is the pgtype.TryWrapEncodePlanFunc of presized.
func tryWrapPresized(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	switch v := value.(type) {
	case presized[[]string]:
		return &presizePlan[[]string]{}, v.v, true
	}
	return nil, nil, false
}

// registerPresized makes m (a connection's type map) encode presized
// values, once; Open registers it on every connection of the pool as it
// is made. It matches no other type, so the connection's other queries
// are encoded as before.
func registerPresized(m *pgtype.Map) {
	ours := reflect.ValueOf(tryWrapPresized).Pointer()
	if slices.ContainsFunc(m.TryWrapEncodePlanFuncs, func(f pgtype.TryWrapEncodePlanFunc) bool { return reflect.ValueOf(f).Pointer() == ours }) {
		return
	}
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapPresized}, m.TryWrapEncodePlanFuncs...)
}

// presize returns args with the first, a []string, made presized by about
// the encoded size of all (binary arrays: a header, then each element's
// length and bytes).
func presize(args ...any) []any {
	n := 0
	for _, a := range args {
		n += 24
		switch v := a.(type) {
		case []string:
			for _, s := range v {
				n += 4 + len(s)
			}
		case []*string:
			for _, s := range v {
				n += 4
				if s != nil {
					n += len(*s)
				}
			}
		case [][]byte:
			for _, b := range v {
				n += 4 + len(b)
			}
		case []int64:
			n += 12 * len(v)
		case []*int64:
			n += 12 * len(v)
		case []int32:
			n += 8 * len(v)
		case []*time.Time:
			n += 12 * len(v)
		}
	}
	args[0] = presized[[]string]{args[0].([]string), n}
	return args
}
