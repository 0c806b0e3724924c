package planexec

import (
	"encoding/json"
	"errors"
	"strings"
)

// errNoJSON reports a model answer holding no JSON value of the wanted
// shape.
var errNoJSON = errors.New("no JSON value of the expected shape in the model's answer")

// parseJSON decodes the first JSON value of type T found in a model's
// answer: the whole text, or else the first value starting at a '{' or
// '[' that decodes as a T, so that code fences (```json … ```), prose
// before the value and text after it are ignored. A T nested in another
// value is found too: the array of {"steps": [...]} is a []string.
func parseJSON[T any](text string) (T, error) {
	var zero T
	text = strings.TrimSpace(text)
	if v, err := decodeFirst[T](text); err == nil {
		return v, nil
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		if v, err := decodeFirst[T](text[i:]); err == nil {
			return v, nil
		}
	}
	return zero, errNoJSON
}

// decodeFirst decodes the JSON value at the start of text into a new T;
// what follows the value is ignored.
func decodeFirst[T any](text string) (T, error) {
	var v T
	err := json.NewDecoder(strings.NewReader(text)).Decode(&v)
	return v, err
}
