package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

// Package goals imports no database driver: the program registers those
// of the sql-benchmark goals.
func TestProgramRegistersTheSQLBenchmarkDrivers(t *testing.T) {
	tests := []struct {
		name string
		sql  goals.SQLConfig
	}{
		{"sqlite", goals.SQLConfig{Driver: "sqlite", DSN: "bench.db"}},
		{"postgres", goals.SQLConfig{Driver: "postgres", DSN: "postgres://localhost/bench"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sql.Query, tt.sql.MaxMS = "SELECT 1", 50
			_, err := goals.New(goals.GoalSQLBenchmark, goals.Config{SQL: tt.sql})
			require.NoError(t, err)
		})
	}
}
