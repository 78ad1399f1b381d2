package desksocket

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A ping (every intentq-hook run sends one before its first call) is no warning in the
// worker's log; a call cut off in its request still is.
func TestPingIsNoUnreadableCall(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	srv, err := Listen(SocketPath(t.TempDir()), nil, nil, "s3cret", zap.New(core))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	client := Client{Path: srv.Addr(), Token: "s3cret"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		require.NoError(t, client.Ping(ctx))
	}

	c, err := net.Dial("unix", srv.Addr())
	require.NoError(t, err)
	_, err = fmt.Fprint(c, `{"op":"take"`) // no end of line: the caller went away mid-request
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return logs.FilterMessage("hook desk: call unreadable").Len() > 0 },
		10*time.Second, 10*time.Millisecond, "the cut-off call is logged")
	require.NoError(t, srv.Close()) // waits for every call it took: the pings were answered
	require.Equal(t, 1, logs.Len(), "only the cut-off call is logged: %v", logs.All())
}
