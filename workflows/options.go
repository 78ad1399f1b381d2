package workflows

// Activity options and continue-as-new thresholds, named once.

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

var tmuxActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	// The pane's activities heartbeat every second (activities.HeartbeatEvery): a worker that
	// died while typing is noticed within this, and the typing resumes on its restart after
	// what its markers say went in (issue 38).
	HeartbeatTimeout: 10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    5 * time.Second,
		// A few quick tries; the intent's reminder schedule retries after that.
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{activities.ErrTypeTmuxTargetMissing, activities.ErrTypeEmptyText, activities.ErrTypeInvalidText},
	},
}

func withNtfyOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 15 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			MaximumAttempts:        3, // then the reminder schedule retries after RetryAfter
			NonRetryableErrorTypes: []string{activities.ErrTypeNtfyRejected, activities.ErrTypeNtfyNotConfigured},
		},
	})
}

// historyTooLong reports whether a workflow should continue as new: the server suggests it, or
// its history has reached max events.
func historyTooLong(ctx workflow.Context, max int) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= max
}

// historyActivityOptions commit to a session's history file (SPEC H1, H2).
var historyActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
	},
}

// withTelegram is ctx with opts for a Telegram activity, on the task queue only workers with
// the bot token poll (TelegramTaskQueue).
func withTelegram(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context {
	opts.TaskQueue = TelegramTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
	return workflow.WithActivityOptions(ctx, opts)
}

// withHostServedOptions ask whether a session's host is served: a read of the server, tried a
// few times.
func withHostServedOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeSignalsNotConfigured},
		},
	})
}

// telegramReactOptions set a reaction: a few tries, then it is not worth more.
var telegramReactOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeTelegramRejected}},
}

// telegramSendOptions send an answer to the chat; a message Telegram refuses is not retried.
var telegramSendOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 2 * time.Second, MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeTelegramRejected}},
}

// signalActivityOptions send a session's answers to its intents (activities.SignalAll). The
// server keeps each signal's request ID, so retrying is always safe; it retries until the
// server takes them, as the server itself retries a workflow's SignalExternalWorkflow.
var signalActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second,
		MaximumAttempts:        0, // until taken: an intent's answer is not to be dropped
		NonRetryableErrorTypes: []string{activities.ErrTypeSignalRequestInvalid, activities.ErrTypeSignalsNotConfigured},
	},
}
