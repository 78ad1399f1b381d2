package main

import (
	"strings"
	"testing"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks"
)

// Issue 61: `starter mcp` acts for the session it can tell (--session, its agent naming one, the
// session whose tmux pane it runs in: the one its agent was bound to there, else the one session
// of this host whose target the pane is) and never for the default session otherwise: any agent
// of the person's runs it (setup registers it user-wide), so one that cannot tell its session
// serves none, and says why.
func TestMCPServesOnlyASessionItCanTell(t *testing.T) {
	cfg := &config.Config{Host: "here", DataDir: t.TempDir(), Sessions: map[string]config.Session{
		"secretary": {Default: true, TmuxTarget: "secretary:0", CLI: "claude", Mode: config.ModeTmux},
		"ops":       {TmuxTarget: "ops:0", CLI: "claude", Mode: config.ModeTmux, Chats: []int64{77}},
		"me":        {TmuxTarget: "me:0", Mode: config.ModeTmux, Human: true},
		"far":       {TmuxTarget: "far:0", CLI: "claude", Mode: config.ModeTmux, Host: "elsewhere"},
		"twin":      {TmuxTarget: "twin:0", CLI: "claude", Mode: config.ModeTmux},
		"runs":      {TmuxTarget: "runs:0", CLI: "claude", Mode: config.ModeHeadless},
	}}
	bound := hooks.Pane{ID: "%5", Socket: "/tmp/tmux-1000/default"}
	// The agent in pane %5 bound to ops by its hooks (the binding's pane is its socket and id).
	if err := hooks.Bind(cfg.DataDir, hooks.Binding{CLI: "claude", ID: "0b7c5d1e-1111-4222-8333-444455556666", Agent: "ops", Pane: bound.Socket + " " + bound.ID}); err != nil {
		t.Fatal(err)
	}
	other := hooks.Pane{ID: "%6", Socket: bound.Socket}
	// at says which sessions' tmux targets are the pane now.
	at := func(sessions ...string) func(string) bool {
		return func(s string) bool { return strings.Contains(" "+strings.Join(sessions, " ")+" ", " "+s+" ") }
	}
	for name, c := range map[string]struct {
		session, agent string
		pane           hooks.Pane
		inItsPane      func(string) bool
		want, why      string
	}{
		"--session":                         {session: "ops", want: "ops"},
		"--session, the default":            {session: "secretary", agent: "ops", want: "secretary"},
		"an agent naming a session":         {agent: "ops", want: "ops"},
		"bound in its pane":                 {pane: bound, inItsPane: at("ops"), want: "ops"},
		"bound, its pane shared":            {pane: bound, inItsPane: at("ops", "twin"), want: "ops"},
		"in a session's pane":               {pane: other, inItsPane: at("ops"), want: "ops"},
		"in the default session's pane":     {pane: other, inItsPane: at("secretary"), want: "secretary"},
		"an agent naming no session":        {agent: "helper", pane: other, inItsPane: at("secretary"), why: `its agent "helper"`},
		"outside tmux":                      {inItsPane: at("secretary"), why: "outside tmux"},
		"Codex's shared daemon":             {pane: hooks.Pane{Shared: true}, inItsPane: at("secretary"), why: "Codex's shared daemon"},
		"in no session's pane":              {pane: other, inItsPane: at(), why: "tmux pane %6, which is no session's tmux target"},
		"bound, the session moved":          {pane: bound, inItsPane: at(), why: "no session's tmux target"},
		"in two sessions' pane":             {pane: other, inItsPane: at("ops", "twin"), why: "2 sessions (ops, twin)"},
		"in the person's own pane":          {pane: other, inItsPane: at("me"), why: "no session's tmux target"},
		"in another host's session's pane":  {pane: other, inItsPane: at("far"), why: "no session's tmux target"},
		"in a headless session's work pane": {pane: other, inItsPane: at("runs"), why: "no session's tmux target"},
	} {
		s := mcpSettings(cfg, c.session, c.agent, c.pane, c.inItsPane)
		got := s.Session
		var why error
		if got == "" && s.Bound != nil {
			got, why = s.Bound()
		}
		if got != c.want {
			t.Errorf("%s: serves %q (%v), want %q", name, got, why, c.want)
		}
		if c.why != "" && (why == nil || !strings.Contains(why.Error(), c.why)) {
			t.Errorf("%s: why %v, want it to say %q", name, why, c.why)
		}
		if s.Agent != c.agent {
			t.Errorf("%s: agent %q, want %q", name, s.Agent, c.agent)
		}
	}
}

// The session of the pane is asked at each call: an agent whose session's target moves to
// another pane serves none from then on, and the session whose pane it is now, once it is.
func TestMCPAsksItsPaneAtEachCall(t *testing.T) {
	cfg := &config.Config{Host: "here", DataDir: t.TempDir(), Sessions: map[string]config.Session{
		"secretary": {Default: true, TmuxTarget: "secretary:0", CLI: "claude", Mode: config.ModeTmux},
		"ops":       {TmuxTarget: "ops:0", CLI: "claude", Mode: config.ModeTmux},
	}}
	here := "ops"
	s := mcpSettings(cfg, "", "", hooks.Pane{ID: "%7"}, func(name string) bool { return name == here })
	for _, step := range []struct{ here, want string }{{"ops", "ops"}, {"", ""}, {"secretary", "secretary"}, {"ops", "ops"}} {
		here = step.here
		if got, why := s.Bound(); got != step.want || (got == "") != (why != nil) {
			t.Errorf("the pane is %q's: serves %q (%v), want %q", step.here, got, why, step.want)
		}
	}
}
