package intent

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Issue 24: a slow or failing read is asked again (Recover gave up at its first slow query);
// a read that finds the intent gone is not.
func TestRecoverReadsRetry(t *testing.T) {
	calls := 0
	err := retry(context.Background(), 3, func(context.Context) error {
		calls++
		if calls < 3 {
			return context.DeadlineExceeded
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success on the third", err, calls)
	}
	calls = 0
	err = retry(context.Background(), 3, func(context.Context) error { calls++; return fmt.Errorf("%w: x", ErrNotFound) })
	if !errors.Is(err, ErrNotFound) || calls != 1 {
		t.Fatalf("not found: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retry(ctx, 3, func(context.Context) error { return errors.New("down") }); err == nil {
		t.Fatal("a cancelled recovery succeeded")
	}
}
