package tclient

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// CommitLaterKey is the gRPC metadata key of a call the embedded server may answer before its
// next fsync (CommitLater).
const CommitLaterKey = "intentq-commit-later"

// CommitLater marks the calls made with ctx as ones the embedded server may answer once they
// are committed, before the fsync that puts them on disk (its group commit holds a client's
// call until then). For words between the machine's own processes that a power loss makes moot
// (a session's answers to its intents, a hook's report): the server then rolls back to an
// earlier commit, as after its crash, and the agents they concern are gone too. Elsewhere (an
// external cluster) it changes nothing.
func CommitLater(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, CommitLaterKey, "1")
}
