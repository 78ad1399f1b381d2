package main_test

import (
	"strings"
	"sync"
	"testing"
)

// receiptWatch counts, in a worker's log, the typings no receipt confirmed and the deliveries
// the session found still on the input line (the CLI dropped the Enter on a loaded machine),
// cleared and typed again. The rule of the typed-with-receipt tests (issues 25, 35, 37): a "no
// receipt" counts against the receipt only when no "not submitted" answers it.
type receiptWatch struct {
	mu      sync.Mutex
	warned  []string
	retyped int
}

// watchReceipts notes every line of lines as it comes, until lines closes.
func watchReceipts(lines <-chan map[string]any) *receiptWatch {
	w := &receiptWatch{}
	go func() {
		for l := range lines {
			w.note(l)
		}
	}()
	return w
}

// note counts one log line.
func (w *receiptWatch) note(l map[string]any) {
	msg, _ := l["msg"].(string)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case strings.Contains(msg, "no receipt"):
		w.warned = append(w.warned, msg)
	case msg == "delivery not submitted, clearing the input line":
		w.retyped++
	}
}

// check fails t when a typing went without cli's receipt and was not typed again.
func (w *receiptWatch) check(t testing.TB, cli string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.warned) > w.retyped {
		t.Errorf("typed without %s's receipt: %v (%d typed again)", cli, w.warned, w.retyped)
	} else if w.retyped > 0 {
		t.Logf("%s dropped %d Enter; the text was found on its input line and typed again", cli, w.retyped)
	}
}
