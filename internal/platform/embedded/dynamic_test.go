package embedded

import (
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

// TestDynamicConfigAsTheServerReadsIt reads the embedded server's dynamic config through the
// server's own settings, as its services do: a key spelled wrong or a value of the wrong type
// would read as Temporal's default.
func TestDynamicConfigAsTheServerReadsIt(t *testing.T) {
	dc := dynamicconfig.NewCollection(dynamicConfig(), log.NewNoopLogger())
	if dynamicconfig.ExternalPayloadsEnabled.Get(dc)("default") {
		t.Error("external payloads are on: the history service walks every event's payloads for nothing")
	}
	if got := dynamicconfig.HistoryCacheHostLevelMaxSize.Get(dc)(); got != HistoryCacheSize {
		t.Errorf("history cache: %d, want %d", got, HistoryCacheSize)
	}
	if got := dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Get(dc)(); got != VisibilityWriters {
		t.Errorf("visibility writers: %d, want %d", got, VisibilityWriters)
	}
	if got := dynamicconfig.WorkflowExecutionMaxInFlightUpdates.Get(dc)("default"); got != MaxInFlightUpdates {
		t.Errorf("updates in flight: %d, want %d", got, MaxInFlightUpdates)
	}
	if got := dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Get(dc)("default"); got != SingleNodeVisibilityRPS {
		t.Errorf("visibility RPS: %d, want %d", got, SingleNodeVisibilityRPS)
	}
}
