package toolpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// guardCase is one case of testdata/guard_attacks.json (the attacks of issue 33 on the guard,
// each to be refused) or testdata/guard_passes.json (the person's own commands, each to go
// on). worker/security_test.go plays the same files against the real `starter hook policy`.
//
// The layout the commands assume: the run's home HOME holds .ssh/id_ed25519 (the text
// FAKE-SSH-KEY); data_dir DATA holds access.token (FAKE-ACCESS-TOKEN); the work folder is
// DATA/headless/batch/CHANNEL/work (or HOME, for workdir "home") and holds README.md and
// docs/a.md; the guard's Private are DATA and HOME/.ssh; the policy is the channel's,
// resolved for the session "batch" with the case's session rule.
type guardCase struct {
	Name string `json:"name"`
	// Channel is the run's channel: telegram (read-only), web or cli.
	Channel string `json:"channel"`
	// Session, when set, is the session scope's rule (allow and deny lists).
	Session *Rule `json:"session,omitempty"`
	// Workdir is "" (DATA/headless/batch/CHANNEL/work) or "home" (the run's home).
	Workdir string `json:"workdir,omitempty"`
	// Command is the Bash tool's command.
	Command string `json:"command"`
	// Expect is "deny" or "allow".
	Expect string `json:"expect"`
	// Hidden is the second command bash runs where the old parser saw one: "touch PWNED",
	// "id" or "rm -f README.md".
	Hidden string `json:"hidden,omitempty"`
	// Leaks is the secret bash prints when it runs the command: "ssh_key" or "access_token".
	Leaks string `json:"leaks,omitempty"`
	// Reason, when set, is a part of the deny's reason.
	Reason string `json:"reason,omitempty"`
	// Why says what the case plays.
	Why string `json:"why,omitempty"`
}

func loadGuardCases(t *testing.T, file string) []guardCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var cases []guardCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", file)
	}
	return cases
}

// attackFixture is the layout guardCase describes.
type attackFixture struct {
	home, data, work string
	guard            Guard
}

func newAttackFixture(t *testing.T, c guardCase) attackFixture {
	t.Helper()
	root := t.TempDir()
	f := attackFixture{home: filepath.Join(root, "home"), data: filepath.Join(root, "data")}
	f.work = filepath.Join(f.data, "headless", "batch", c.Channel, "work")
	if c.Workdir == "home" {
		f.work = f.home
	}
	for _, d := range []string{filepath.Join(f.home, ".ssh"), f.data, filepath.Join(f.work, "docs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{
		filepath.Join(f.home, ".ssh", "id_ed25519"): "FAKE-SSH-KEY\n",
		filepath.Join(f.data, "access.token"):       "FAKE-ACCESS-TOKEN\n",
		filepath.Join(f.work, "README.md"):          "hello\n",
		filepath.Join(f.work, "docs", "a.md"):       "a\n",
	} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{}
	if c.Session != nil {
		p.Sessions = map[string]Rule{"batch": *c.Session}
	}
	eff, err := p.Resolve(c.Channel, "batch")
	if err != nil {
		t.Fatal(err)
	}
	f.guard = Guard{Policy: eff, Dir: f.work, Home: f.home, Private: []string{f.data, filepath.Join(f.home, ".ssh")}}
	return f
}

// Issue 33, item 2: every attack of the matrix is refused by the guard, and through the hook
// within its budget. Each hidden-command case is real (bash runs the second command) and so is
// each leak (bash prints the secret).
func TestGuardAttacks(t *testing.T) {
	for _, c := range loadGuardCases(t, "guard_attacks.json") {
		t.Run(c.Name, func(t *testing.T) {
			if c.Expect != "deny" {
				t.Fatalf("expect %q, want deny", c.Expect)
			}
			f := newAttackFixture(t, c)
			err := f.guard.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.Command}), Cwd: f.work})
			if err == nil {
				t.Fatalf("%q allowed (%s)", c.Command, c.Why)
			}
			if c.Reason != "" && !strings.Contains(err.Error(), c.Reason) {
				t.Errorf("reason %q, want it to say %q", err, c.Reason)
			}
			start := time.Now()
			reason := hook(t, f.guard, callJSON("Bash", map[string]any{"command": c.Command}, f.work))
			if reason == "" {
				t.Errorf("hook let %q go on", c.Command)
			}
			if d := time.Since(start); d > CheckBudget {
				t.Errorf("hook took %s, more than its budget", d)
			}
			if c.Hidden != "" || c.Leaks != "" {
				proveWithBash(t, f, c)
			}
		})
	}
}

// proveWithBash runs an attack with bash in its fixture and checks that it does what the case
// says: runs the hidden command, or prints the secret.
func proveWithBash(t *testing.T, f attackFixture, c guardCase) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("no bash to prove the case with: install bash")
	}
	cmd := exec.Command(bash, "-c", c.Command)
	cmd.Dir = f.work
	cmd.Env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	out, _ := cmd.CombinedOutput()
	switch {
	case c.Hidden == "touch PWNED":
		if _, err := os.Stat(filepath.Join(f.work, "PWNED")); err != nil {
			t.Errorf("bash did not run the hidden touch: %s", out)
		}
	case c.Hidden == "id":
		if !bytes.Contains(out, []byte("uid=")) {
			t.Errorf("bash did not run the hidden id: %s", out)
		}
	case c.Hidden == "rm -f README.md":
		if _, err := os.Stat(filepath.Join(f.work, "README.md")); err == nil {
			t.Errorf("bash did not run the hidden rm: %s", out)
		}
	case c.Hidden != "":
		t.Fatalf("no way to prove hidden %q", c.Hidden)
	}
	secret := map[string]string{"ssh_key": "FAKE-SSH-KEY", "access_token": "FAKE-ACCESS-TOKEN"}[c.Leaks]
	if c.Leaks != "" && (secret == "" || !bytes.Contains(out, []byte(secret))) {
		t.Errorf("bash did not print the %s: %s", c.Leaks, out)
	}
}

// The person's own commands keep going through the guard.
func TestGuardPasses(t *testing.T) {
	for _, c := range loadGuardCases(t, "guard_passes.json") {
		t.Run(c.Name, func(t *testing.T) {
			if c.Expect != "allow" {
				t.Fatalf("expect %q, want allow", c.Expect)
			}
			f := newAttackFixture(t, c)
			if err := f.guard.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.Command}), Cwd: f.work}); err != nil {
				t.Errorf("%q refused: %v", c.Command, err)
			}
		})
	}
}

// Issue 33, item 3: the hook fails closed on time. A check that does not finish within the
// budget (here: a call that never arrives) is a deny, answered at the budget.
func TestHookBudget(t *testing.T) {
	defer func(d time.Duration) { checkBudget = d }(checkBudget)
	checkBudget = 200 * time.Millisecond
	f := newGuardFixture(t)
	data, _ := json.Marshal(f.guard(t, Policy{}, ChannelTelegram))
	file := filepath.Join(t.TempDir(), "guard.json")
	if err := os.WriteFile(file, data, 0o400); err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	defer w.Close()
	var out bytes.Buffer
	start := time.Now()
	if err := PreToolUse(file, r, &out); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("PreToolUse answered after %s", d)
	}
	if !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), "took too long") {
		t.Errorf("output %q, want a deny saying the check took too long", out.String())
	}
}

// The work of one call is bounded: a long command, too many wildcard words, wildcards that go
// through too many folder entries are refused, whatever the policy.
func TestGuardWorkBounds(t *testing.T) {
	f := newGuardFixture(t)
	cli := f.guard(t, Policy{}, ChannelCLI)
	many := filepath.Join(f.dir, "many")
	if err := os.MkdirAll(many, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= maxEntries/250; i++ {
		d := filepath.Join(many, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 250; j++ {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	var patterns []string
	for i := 0; i <= maxPatterns; i++ {
		patterns = append(patterns, fmt.Sprintf("docs/*%d", i))
	}
	for name, command := range map[string]string{
		"long command":      "ls " + strings.Repeat("a", maxCommandBytes),
		"too many patterns": "ls " + strings.Join(patterns, " "),
		"too many entries":  "ls many/*/*",
	} {
		t.Run(name, func(t *testing.T) {
			err := cli.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": command}), Cwd: f.dir})
			if !errors.Is(err, ErrOverBudget) {
				t.Errorf("err = %v, want ErrOverBudget", err)
			}
		})
	}
	if err := cli.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": "ls many/d*"}), Cwd: f.dir}); err != nil {
		t.Errorf("one folder's entries: %v", err)
	}
}
