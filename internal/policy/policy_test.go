package policy

import (
	"testing"
	"time"
)

// SPEC I6, I7: the defaults are the spec's schedule.
func TestI6DefaultSchedule(t *testing.T) {
	want := Reminders{FirstAfter: 30 * time.Second, RepeatEvery: 5 * time.Minute, RetryAfter: time.Minute, OrphanAfter: 24 * time.Hour, SnippetChars: 40}
	if DefaultReminders != want {
		t.Errorf("DefaultReminders = %+v, want %+v", DefaultReminders, want)
	}
}

func TestBusyOrDefaultKeepsWhatIsSet(t *testing.T) {
	got := Busy{BusyWait: time.Second}.OrDefault()
	want := Busy{BusyWait: time.Second, BusyAlertAfter: DefaultBusy.BusyAlertAfter, BusyLines: DefaultBusy.BusyLines, WaitsForYouAfter: DefaultBusy.WaitsForYouAfter}
	if got != want {
		t.Errorf("OrDefault = %+v, want %+v", got, want)
	}
	if (Busy{}).OrDefault() != DefaultBusy {
		t.Errorf("zero Busy does not default")
	}
}

// A session configured before waits_for_you_after alerts on a dialog as on a busy pane.
func TestWaitsForYouFallsBackToBusyAlert(t *testing.T) {
	if got := (Busy{BusyAlertAfter: time.Minute}).OrDefault().WaitsForYouAfter; got != time.Minute {
		t.Errorf("WaitsForYouAfter = %s, want the busy alert's 1m", got)
	}
}
