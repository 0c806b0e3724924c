package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
)

// channelPaths holds one path per channel, as the map it replaces did:
// setting a channel again replaces its path, and the paths stay sorted
// by channel name whatever the order they are set in.
func TestChannelPathsHoldOnePathPerChannel(t *testing.T) {
	path := func(v int64) []deltas.Blob { return []deltas.Blob{{Version: v}} }
	type op struct {
		set    string // set this channel's path to path(v)
		remove string
		v      int64
	}
	tests := []struct {
		name string
		ops  []op
		want channelPaths
	}{
		{name: "none", want: nil},
		{name: "set out of order", ops: []op{{set: "m", v: 1}, {set: "a", v: 2}, {set: "z", v: 3}},
			want: channelPaths{{"a", path(2)}, {"m", path(1)}, {"z", path(3)}}},
		{name: "set twice keeps the last", ops: []op{{set: "a", v: 1}, {set: "b", v: 2}, {set: "a", v: 5}},
			want: channelPaths{{"a", path(5)}, {"b", path(2)}}},
		{name: "remove", ops: []op{{set: "a", v: 1}, {set: "b", v: 2}, {remove: "a"}, {remove: "missing"}},
			want: channelPaths{{"b", path(2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps channelPaths
			for _, o := range tt.ops {
				if o.set != "" {
					ps.set(o.set, path(o.v))
				} else {
					ps.remove(o.remove)
				}
			}
			require.Equal(t, tt.want, ps)
			for _, p := range tt.want {
				require.Equal(t, p.path, ps.get(p.name))
			}
			require.Nil(t, ps.get("absent"))
		})
	}
}
