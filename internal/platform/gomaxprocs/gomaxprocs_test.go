package gomaxprocs

import (
	"runtime"
	"testing"
)

func TestSpareOneMoreThanTheRuntimeChose(t *testing.T) {
	if got := spare("", 2); got != 3 {
		t.Errorf("two cores: %d processors, want 3", got)
	}
	if got := spare("", 1); got != 2 {
		t.Errorf("one core: %d processors, want 2", got)
	}
}

func TestSpareKeepsWhatTheEnvironmentSet(t *testing.T) {
	if got := spare("2", 2); got != 2 {
		t.Errorf("GOMAXPROCS=2: %d processors, want 2", got)
	}
}

func TestSpareSetsTheRuntime(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	t.Setenv("GOMAXPROCS", "")
	if got := Spare(); got != before+1 || runtime.GOMAXPROCS(0) != before+1 {
		t.Errorf("Spare() = %d, runtime %d; want %d", got, runtime.GOMAXPROCS(0), before+1)
	}
}
