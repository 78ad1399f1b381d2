package workflows

import "go.temporal.io/sdk/workflow"

// Metric names of intentq's counters (exported by package metrics on the worker's /metrics).
const (
	metricIntents         = "intentq_intents_recorded"
	metricRemindersSent   = "intentq_reminders_sent"
	metricRemindersFailed = "intentq_reminders_failed"
	metricDeliveries      = "intentq_deliveries"
	metricRuns            = "intentq_runs"
	metricRunCost         = "intentq_run_cost_micro_usd"
)

// count adds n to a counter; the SDK skips it while replaying.
func count(ctx workflow.Context, name string, tags map[string]string, n int64) {
	workflow.GetMetricsHandler(ctx).WithTags(tags).Counter(name).Inc(n)
}
