package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuickstartRunsEndToEnd(t *testing.T) {
	require.NoError(t, run(context.Background(), "testing", false))
}
