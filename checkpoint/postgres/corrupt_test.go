package postgres_test

import (
	"context"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

// TestDamagedRowsAreCorruptErrors damages the rows of a checkpoint with
// SQL: every read of it, a filtered List included, names it.
func TestDamagedRowsAreCorruptErrors(t *testing.T) {
	checkpointtest.DamagedRows(t, func(t *testing.T) (checkpoint.Saver, func(context.Context, string) error) {
		schema := freshSchema(t)
		return open(t, schema), func(ctx context.Context, query string) error {
			_, err := connect(t, schema).Exec(ctx, query)
			return err
		}
	}, []checkpointtest.Damage{
		{Name: "metadata not an object", Query: `UPDATE agentgraph_checkpoints SET metadata = '"garbage"'`},
		{Name: "metadata null", Query: `UPDATE agentgraph_checkpoints SET metadata = 'null'`},
		{Name: "metadata step of another type", Query: `UPDATE agentgraph_checkpoints SET metadata = '{"source":"loop","step":"one"}'`, StepChanged: true},
		{Name: "versions not an object", Query: `UPDATE agentgraph_checkpoints SET versions = '[1]'`},
		{Name: "version not an integer", Query: `UPDATE agentgraph_checkpoints SET versions = '{"a":1.5}'`},
		{Name: "size 1 TiB", Query: `UPDATE agentgraph_blobs SET size = 1099511627776`},
		{Name: "hash short", Query: `UPDATE agentgraph_blobs SET hash = '\x00'`},
		{Name: "data truncated", Query: `UPDATE agentgraph_blobs SET data = substr(data, 1, 2)`},
		{Name: "own base", Query: `UPDATE agentgraph_blobs SET base = version`},
		{Name: "value missing", Query: `DELETE FROM agentgraph_blobs`},
	})
}
