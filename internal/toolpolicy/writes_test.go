package toolpolicy

import "testing"

// The defaults: cli and web write, telegram does not; a configured command beyond the
// read-only ones writes.
func TestWrites(t *testing.T) {
	for channel, want := range map[string]bool{ChannelCLI: true, ChannelWeb: true, ChannelTelegram: false} {
		eff, err := Policy{}.Resolve(channel, "s")
		if err != nil {
			t.Fatal(err)
		}
		if got := eff.Writes(); got != want {
			t.Errorf("%s: Writes() = %v, want %v", channel, got, want)
		}
	}
	eff, err := Policy{Channels: map[string]Rule{ChannelTelegram: {Allow: []string{"Bash(make:*)"}}}}.Resolve(ChannelTelegram, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !eff.Writes() {
		t.Errorf("telegram with Bash(make:*) allowed must count as writing: %+v", eff.Allowed)
	}
}
