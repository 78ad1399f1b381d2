package main_test

import (
	"testing"
	"time"
)

func TestTmpProbeCopilotUser(t *testing.T) {
	run := copilotIdleRun(t)
	res := idleAgentScenario(t, run, 1)
	_ = res
	time.Sleep(time.Second)
	for _, r := range run.requests() {
		t.Logf("typed=%v added=%q", r.Typed, r.Added)
	}
}
