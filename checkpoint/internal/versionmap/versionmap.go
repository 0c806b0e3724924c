package versionmap

import (
	"maps"
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Of returns the version of every channel of chs, by name (never nil).
func Of(chs []checkpoint.Channel) map[string]int64 {
	m := make(map[string]int64, len(chs))
	for _, ch := range chs {
		m[ch.Name] = ch.Version
	}
	return m
}

// Channels lists the channels of m sorted by name, without values.
func Channels(m map[string]int64) []checkpoint.Channel {
	if len(m) == 0 {
		return nil
	}
	out := make([]checkpoint.Channel, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, checkpoint.Channel{Name: name, Version: m[name]})
	}
	return out
}
