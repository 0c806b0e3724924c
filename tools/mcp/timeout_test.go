package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

func TestServerThatNeverInitialisesFailsAtTheConnectTimeLimit(t *testing.T) {
	// Under the caller's context, which has no deadline, the handshake
	// would wait forever for this server.
	_, err := mcp.ConnectStdio(context.Background(), os.Args[0], []string{"-test.run=^$"},
		mcp.WithName("mute"), mcp.WithConnectTimeout(300*time.Millisecond),
		mcp.WithEnv(muteEnv+"=1", "GORACE=atexit_sleep_ms=0"))
	var te *mcp.TimeoutError
	require.ErrorAs(t, err, &te)
	require.Equal(t, mcp.TimeoutError{Server: "mute", Method: "initialize", Limit: 300 * time.Millisecond}, *te)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "mcp server mute: no answer to initialize within 300ms")
}

func TestHungCallIsCancelledAtTheCallTimeLimit(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		w := newLineWatcher("block: started")
		s := connectStdio(t, mcp.WithName("srv"), mcp.WithStderr(w), mcp.WithCallTimeout(300*time.Millisecond))
		_, err := s.CallTool(context.Background(), "block", nil)
		var te *mcp.TimeoutError
		require.ErrorAs(t, err, &te)
		require.Equal(t, mcp.TimeoutError{Server: "srv", Method: "tools/call block", Limit: 300 * time.Millisecond}, *te)
		<-w.seen
		out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"still here"}`))
		require.NoError(t, err, "the session outlives a timed-out call")
		require.Equal(t, "still here", out)
	})
	t.Run("http", func(t *testing.T) {
		h := newHooks()
		s := connectHTTP(t, h, mcp.WithName("srv"), mcp.WithCallTimeout(300*time.Millisecond))
		_, err := s.CallTool(context.Background(), "block", nil)
		var te *mcp.TimeoutError
		require.ErrorAs(t, err, &te)
		require.Equal(t, "tools/call block", te.Method)
		<-h.cancelled // the server was told, and its handler's context ended
	})
}

func TestStructuredContentIsNotSentTwice(t *testing.T) {
	transports(t, func(t *testing.T, s *mcp.Session) {
		require.Len(t, fileText, 5998)
		out, err := s.CallTool(context.Background(), "read_file", nil)
		require.NoError(t, err)
		require.Equal(t, fileText, out, "the text content only: the structured copy would double it, past the output limit")
		require.Less(t, len(out), tools.DefaultOutputLimit)
	})
}
