// Package modeljson finds the JSON value a model was asked for in its
// answer, which models wrap in code fences, precede with prose or follow
// with remarks.
package modeljson

import (
	"encoding/json"
	"errors"
	"strings"
)

// ErrNoJSON reports an answer holding no JSON value of the wanted shape.
var ErrNoJSON = errors.New("no JSON value of the expected shape in the model's answer")

// maxStarts bounds the positions tried, so that a long or hostile answer
// full of brackets costs linear time, not quadratic.
const maxStarts = 200

// Parse decodes the first JSON value of type T found in text: the whole
// text, or else the first value starting at a '{' or '[' that decodes as
// a T, so that code fences (```json … ```), prose before the value and
// text after it are ignored. A T nested in another value is found too:
// the array of {"steps": [...]} is a []string. At most the first 200
// brackets are tried.
func Parse[T any](text string) (T, error) {
	var zero T
	text = strings.TrimSpace(text)
	if v, err := decodeFirst[T](text); err == nil {
		return v, nil
	}
	tried := 0
	for i := 0; i < len(text) && tried < maxStarts; i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		tried++
		if v, err := decodeFirst[T](text[i:]); err == nil {
			return v, nil
		}
	}
	return zero, ErrNoJSON
}

// decodeFirst decodes the JSON value at the start of text into a new T;
// what follows the value is ignored.
func decodeFirst[T any](text string) (T, error) {
	var v T
	err := json.NewDecoder(strings.NewReader(text)).Decode(&v)
	return v, err
}
