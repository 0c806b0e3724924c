//go:build linux

package liveness

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSelfIsKnownAndAlive(t *testing.T) {
	me := Self()
	require.NotEmpty(t, me.Host)
	require.Equal(t, os.Getpid(), me.PID)
	require.Positive(t, me.Start)
	require.False(t, Dead(me))
}

func TestDead(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	start, _, ok := stat(pid)
	require.True(t, ok)
	child := Proc{Host: Self().Host, PID: pid, Start: start}
	require.False(t, Dead(child), "a running child")

	tests := []struct {
		name string
		p    Proc
	}{
		{"another host", Proc{Host: "elsewhere", PID: pid, Start: start + 1}},
		{"unknown host", Proc{PID: pid, Start: start + 1}},
		{"unknown pid", Proc{Host: Self().Host, Start: start}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.False(t, Dead(tt.p)) })
	}
	t.Run("pid reused by a later process", func(t *testing.T) {
		require.True(t, Dead(Proc{Host: Self().Host, PID: pid, Start: start - 1}))
	})
	t.Run("this pid with another start", func(t *testing.T) {
		require.True(t, Dead(Proc{Host: Self().Host, PID: os.Getpid(), Start: Self().Start + 1}))
	})

	require.NoError(t, cmd.Process.Kill())
	// Killed but not reaped: a zombie is dead.
	for {
		if _, state, ok := stat(pid); !ok || state == 'Z' {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.True(t, Dead(child), "a killed, unreaped child")
	_ = cmd.Wait()
	require.True(t, Dead(child), "a killed, reaped child")
}
