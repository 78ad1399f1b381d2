package hooks

// Agents started by hand (issue 37). An agent that `starter run-agent` started names its session
// in its environment (INTENTQ_AGENT_ID, the pane's @agent_id); one the person started in the
// session's pane themselves does not, and Codex's shared daemon runs every TUI's hooks with the
// first TUI's environment. Such an agent is bound by what its own hooks say: its
// UserPromptSubmit hook receives a block intentq typed, the typed-block record
// (internal/receipt) names the session and the pane it was typed into, and the CLI's own
// session (or thread) id in the hook's input is then bound to that session, persisted in
// data_dir, so every later hook of that agent serves it while it runs in the session's pane
// (starter checks the pane; in Codex's shared daemon, wherever it runs). Never guessed: the
// block must have been typed by this data_dir's worker moments ago, into a session of the same
// CLI, into the very pane the hook runs in (where the hook runs in its TUI's own process), and a
// block binds one agent only. Until then the agent is served as before: typed into when idle.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/receipt"
)

// BindWithin is how soon after its typing a block's receipt may bind an agent.
const BindWithin = 2 * time.Minute

// Binding is an agent CLI's session bound to an intentq session: Agent serves the hooks whose
// input names ID (Claude Code's session_id, Codex's thread, Gemini's or Copilot's session).
type Binding struct {
	CLI   string `json:"cli"`
	ID    string `json:"id"`
	Agent string `json:"agent"`
	How   string `json:"how,omitempty"`
	// At is when it was bound: its file's time (Bindings); Bind does not read it.
	At time.Time `json:"at"`
	// Pane is the tmux pane the agent runs in, where its hooks run in its own process
	// (Pane.key); empty for Codex's shared daemon.
	Pane string `json:"pane,omitempty"`
}

// key names a pane across tmux servers: its server's socket and its id.
func (p Pane) key() string {
	if p.Shared || p.ID == "" {
		return ""
	}
	return p.Socket + " " + p.ID
}

// bindingFile is where cli's session id is bound: Codex's threads where they always were.
func bindingFile(dataDir, cli, id string) string {
	if cli == "codex" {
		return threadFile(dataDir, id)
	}
	return filepath.Join(dataDir, "agent-bindings", cli, id)
}

// refusalFile keeps the last reason a block typed into session's pane bound no agent.
func refusalFile(dataDir, session string) string {
	return filepath.Join(dataDir, "agent-bindings", "refused", hashKey("", session))
}

// BoundAgent is the agent cli's session id is bound to ("" when none).
func BoundAgent(dataDir, cli, id string) (string, error) {
	if dataDir == "" || !isThreadID(id) {
		return "", nil
	}
	b, err := os.ReadFile(bindingFile(dataDir, cli, id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the agent of %s session %s: %w", cli, id, err)
	}
	agent, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(agent), nil
}

// Bind persists b: the agent on the first line (as Codex's thread files always had it), how on
// the second.
func Bind(dataDir string, b Binding) error {
	if !isThreadID(b.ID) {
		return ErrNoThread
	}
	if err := private.WriteFile(bindingFile(dataDir, b.CLI, b.ID), []byte(b.Agent+"\n"+oneLine(b.How)+"\n"+oneLine(b.Pane)+"\n")); err != nil {
		return fmt.Errorf("bind %s session %s to %s: %w", b.CLI, b.ID, b.Agent, err)
	}
	_ = os.Remove(refusalFile(dataDir, b.Agent))
	return nil
}

// Pane is where a hook runs: its TUI's tmux pane and server socket (TMUX_PANE, and TMUX up to
// its first comma), unless it runs in Codex's shared daemon (Shared), whose environment is
// another TUI's.
type Pane struct {
	ID, Socket string
	Shared     bool
}

// PaneOfEnv is the hook's pane from its environment.
func PaneOfEnv(shared bool) Pane {
	socket, _, _ := strings.Cut(os.Getenv("TMUX"), ",")
	return Pane{ID: os.Getenv("TMUX_PANE"), Socket: socket, Shared: shared}
}

// BindByReceipt binds cli's session id to the session whose pane the block that prompt begins
// with was typed into, when every check holds (see the file's comment); sessionCLI names the
// CLI a session is configured with. It returns the agent ("" and why not when it binds none: a
// prompt that is no typed block is not an error, and says nothing).
func BindByReceipt(dataDir, cli, id, prompt string, pane Pane, sessionCLI func(string) string, now time.Time) (agent string, err error) {
	dir := receipt.Dir(dataDir)
	t, err := receipt.Lookup(dir, prompt)
	if errors.Is(err, receipt.ErrNotTyped) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	refuse := func(why string) (string, error) {
		_ = private.WriteFile(refusalFile(dataDir, t.Session), []byte(now.UTC().Format(time.RFC3339)+" "+why+"\n"))
		return "", errors.New(why)
	}
	switch {
	case !isThreadID(id):
		return refuse(fmt.Sprintf("the %s hook's input names no session id", cli))
	case now.Sub(t.At) > BindWithin:
		return refuse(fmt.Sprintf("the receipt came %s after the block was typed (more than %s)", now.Sub(t.At).Round(time.Second), BindWithin))
	case sessionCLI(t.Session) != cli:
		return refuse(fmt.Sprintf("a %s agent received the block, but session %s is configured for %q", cli, t.Session, sessionCLI(t.Session)))
	case !pane.Shared && pane.ID == "":
		return refuse(fmt.Sprintf("the %s hook runs outside tmux (no TMUX_PANE): it cannot be the agent in pane %s", cli, t.Pane))
	case !pane.Shared && (pane.ID != t.Pane || t.Socket != "" && pane.Socket != "" && pane.Socket != t.Socket):
		return refuse(fmt.Sprintf("the %s agent in pane %s received a block typed into pane %s", cli, pane.ID, t.Pane))
	}
	ok, err := receipt.Claim(dir, prompt, cli+"/"+id)
	if err != nil {
		return "", err
	}
	if !ok {
		return refuse(fmt.Sprintf("the block typed into pane %s already bound another %s agent", t.Pane, cli))
	}
	how := fmt.Sprintf("the receipt of a block typed into pane %s at %s", t.Pane, t.At.UTC().Format(time.RFC3339))
	if pane.Shared {
		how += " (its hooks run in Codex's shared daemon)"
	}
	if err := Bind(dataDir, Binding{CLI: cli, ID: id, Agent: t.Session, How: how, Pane: pane.key()}); err != nil {
		return "", err
	}
	return t.Session, nil
}

// PaneAgent is the agent bound last (by any CLI) in the tmux pane where this process runs (its
// TMUX and TMUX_PANE): what an agent's MCP server, which the CLI starts before any binding and
// which sees no hook input, serves once the agent's hooks have bound it. "" when none.
func PaneAgent(dataDir string, pane Pane) string {
	key := pane.key()
	if key == "" {
		return ""
	}
	bound, _ := Bindings(dataDir, "")
	for _, b := range bound {
		if b.Pane == key {
			return b.Agent
		}
	}
	return ""
}

// Bindings are the agents bound to session (every session's when it is ""; newest first), and
// the last reason a block typed into its pane bound none ("" when none).
func Bindings(dataDir, session string) (bound []Binding, refused string) {
	add := func(cli, dir string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() || !isThreadID(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			agent, rest, _ := strings.Cut(string(b), "\n")
			how, pane, _ := strings.Cut(rest, "\n")
			if session != "" && strings.TrimSpace(agent) != session {
				continue
			}
			var at time.Time
			if info, err := e.Info(); err == nil {
				at = info.ModTime()
			}
			bound = append(bound, Binding{CLI: cli, ID: e.Name(), Agent: strings.TrimSpace(agent), How: strings.TrimSpace(how), At: at, Pane: strings.TrimSpace(pane)})
		}
	}
	add("codex", filepath.Join(dataDir, "codex-threads"))
	clis, _ := os.ReadDir(filepath.Join(dataDir, "agent-bindings"))
	for _, c := range clis {
		if c.IsDir() && c.Name() != "refused" {
			add(c.Name(), filepath.Join(dataDir, "agent-bindings", c.Name()))
		}
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].At.After(bound[j].At) })
	if b, err := os.ReadFile(refusalFile(dataDir, session)); err == nil {
		refused = strings.TrimSpace(string(b))
	}
	return bound, refused
}
