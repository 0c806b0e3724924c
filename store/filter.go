package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// An Operator compares a value's top-level key with an operand.
type Operator string

// The filter operators of [Filter], as in LangGraph.
const (
	Eq  Operator = "$eq"  // JSON equality
	Ne  Operator = "$ne"  // JSON inequality (the key must be present)
	Gt  Operator = "$gt"  // greater than: numbers by value, strings bytewise
	Gte Operator = "$gte" // greater than or equal
	Lt  Operator = "$lt"  // less than
	Lte Operator = "$lte" // less than or equal
)

var operators = []Operator{Eq, Ne, Gt, Gte, Lt, Lte}

// Condition is one compiled filter condition: the value's top-level key
// Key compared by Op with Value.
type Condition struct {
	// Key is the top-level key of the value.
	Key string
	// Op is the operator.
	Op Operator
	// Value is the operand, as decoded from JSON: nil, bool, float64,
	// string, []any or map[string]any; a float64 or a string for the
	// ordering operators.
	Value any
}

// Match reports whether value, decoded as by [UnmarshalValue], satisfies
// c. A value without the key c.Key never does.
func (c Condition) Match(value map[string]any) bool {
	got, ok := value[c.Key]
	if !ok {
		return false
	}
	switch c.Op {
	case Eq:
		return jsonEqual(got, c.Value)
	case Ne:
		return !jsonEqual(got, c.Value)
	}
	cmp, ok := compareJSON(got, c.Value)
	if !ok {
		return false
	}
	switch c.Op {
	case Gt:
		return cmp > 0
	case Gte:
		return cmp >= 0
	case Lt:
		return cmp < 0
	case Lte:
		return cmp <= 0
	}
	return false
}

// IsOrdering reports whether op is $gt, $gte, $lt or $lte.
func (op Operator) IsOrdering() bool {
	return op == Gt || op == Gte || op == Lt || op == Lte
}

func compileFilter(filter map[string]any) ([]Condition, error) {
	var conds []Condition
	for _, key := range slices.Sorted(maps.Keys(filter)) {
		v, err := normalizeJSON(filter[key])
		if err != nil {
			return nil, fmt.Errorf("%w: filter key %q: %w", ErrInvalidOption, key, err)
		}
		ops, isOps := v.(map[string]any)
		if isOps {
			isOps = slices.ContainsFunc(slices.Collect(maps.Keys(ops)), func(k string) bool { return strings.HasPrefix(k, "$") })
		}
		if !isOps {
			conds = append(conds, Condition{Key: key, Op: Eq, Value: v})
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(ops)) {
			op := Operator(name)
			if !slices.Contains(operators, op) {
				return nil, fmt.Errorf("%w: filter key %q: unsupported operator %q (want one of $eq, $ne, $gt, $gte, $lt, $lte)", ErrInvalidOption, key, name)
			}
			operand := ops[name]
			if op.IsOrdering() {
				switch operand.(type) {
				case float64, string:
				default:
					return nil, fmt.Errorf("%w: filter key %q: operator %s needs a number or a string, got %s", ErrInvalidOption, key, name, jsonType(operand))
				}
			}
			conds = append(conds, Condition{Key: key, Op: op, Value: operand})
		}
	}
	return conds, nil
}

// normalizeJSON returns v as encoding/json decodes its encoding.
func normalizeJSON(v any) (any, error) {
	switch v.(type) {
	case nil, bool, float64, string:
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonEqual reports whether two decoded JSON values are equal.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && a == b
	case string:
		b, ok := b.(string)
		return ok && a == b
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, jsonEqual)
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && maps.EqualFunc(a, b, jsonEqual)
	}
	return false
}

// compareJSON compares two numbers or two strings; ok is false for other
// pairs.
func compareJSON(a, b any) (cmp int, ok bool) {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		}
		return 0, true
	case string:
		b, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(a, b), true
	}
	return 0, false
}
