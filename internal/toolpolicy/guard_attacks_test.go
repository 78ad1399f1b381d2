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
// resolved for the session "batch" with the case's session rule. A case's links are made in the
// work folder first (worker/security_test.go makes none: its cases must be refused without them).
type guardCase struct {
	Name string `json:"name"`
	// Channel is the run's channel: telegram (read-only), web or cli.
	Channel string `json:"channel"`
	// Session, when set, is the session scope's rule (allow and deny lists).
	Session *Rule `json:"session,omitempty"`
	// Workdir is "" (DATA/headless/batch/CHANNEL/work) or "home" (the run's home).
	Workdir string `json:"workdir,omitempty"`
	// Links are symbolic links in the work folder, name to target; a target starting with HOME/
	// or DATA/ lies in the run's home or data_dir.
	Links map[string]string `json:"links,omitempty"`
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
	for name, target := range c.Links {
		switch {
		case strings.HasPrefix(target, "HOME/"):
			target = filepath.Join(f.home, strings.TrimPrefix(target, "HOME/"))
		case strings.HasPrefix(target, "DATA/"):
			target = filepath.Join(f.data, strings.TrimPrefix(target, "DATA/"))
		}
		if err := os.Symlink(target, filepath.Join(f.work, name)); err != nil {
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

// Issue 61, item 10: a prefix rule allows no abbreviation of an option it refuses (GNU
// getopt_long and git take any unambiguous prefix), and the refusal names the option.
func TestGuardAbbreviatedOptions(t *testing.T) {
	f := newGuardFixture(t)
	telegram := f.guard(t, Policy{}, ChannelTelegram)
	more := f.guard(t, Policy{Channels: map[string]Rule{"telegram": {Allow: []string{"Bash(du:*)", "Bash(tar:*)", "Bash(find:*)"}}}}, ChannelTelegram)
	for _, c := range []struct {
		g       Guard
		command string
		option  string // "" when allowed
	}{
		{telegram, "grep -r --deref x .", "--deref"},
		{telegram, "grep -r --dereference-rec x .", "--dereference-rec"},
		{telegram, "grep --d x .", "--d"},
		{telegram, "grep -r --der=x .", "--der=x"},
		{telegram, "rg --fol x", "--fol"},
		{telegram, "rg --hostname=./run.sh x", "--hostname=./run.sh"},
		{telegram, "rg --pre-g=*.md x", "--pre-g=*.md"},
		{telegram, "ls -R --derefer .", "--derefer"},
		{telegram, "git log -p --textc", "--textc"},
		{telegram, "git diff --outp=notes.txt", "--outp=notes.txt"},
		{telegram, "git diff --ext", "--ext"},
		{telegram, "git log --=x", "--=x"},
		{more, "du -s --deref .", "--deref"},
		{more, "tar chf - .", "-chf"},
		{more, "tar -c --files-f=list -f -", "--files-f=list"},
		{more, "find -L . -name x", "-L"},
		{telegram, "grep -rn --directories=skip x .", ""},
		{telegram, "git diff --text", ""},
		{telegram, "git log --oneline --follow README.md", ""},
		{telegram, "ls --dereference-command-line .", ""},
		{more, "tar --file=a.tar -t", ""},
	} {
		t.Run(c.command, func(t *testing.T) {
			err := c.g.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.command}), Cwd: f.dir})
			var denied *DeniedError
			switch {
			case c.option == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.option == "":
			case !errors.As(err, &denied) || denied.Option != c.option:
				t.Fatalf("err = %v, want a DeniedError naming the option %s", err, c.option)
			case !strings.Contains(err.Error(), c.option+" can follow links"):
				t.Errorf("reason %q does not say why %s is refused", err, c.option)
			}
		})
	}
}

// Issue 61, item 10: a wildcard is matched as bash does, at least as widely, or refused. The
// fixture's folder holds key, a link to the SSH key.
func TestGuardGlobs(t *testing.T) {
	f := newGuardFixture(t)
	telegram := f.guard(t, Policy{}, ChannelTelegram)
	cli := f.guard(t, Policy{}, ChannelCLI)
	for _, c := range []struct {
		name    string
		g       Guard
		command string
		want    string // a part of the refusal; "" when allowed
	}{
		{"negated set", telegram, "cat k[!x]y", "[!…]"},
		{"caret set", telegram, "cat k[^x]y", "[!…]"},
		{"class", telegram, "cat [[:alpha:]]ey", "[[:class:]]"},
		{"class inside", telegram, "cat k[[:lower:]]y", "[[:class:]]"},
		{"equivalence class", telegram, "cat k[[=e=]]y", "[[:class:]]"},
		{"bracket first", telegram, "cat k[]e]y", "inside brackets"},
		{"escape in brackets", telegram, `cat k[\e]y`, "inside brackets"},
		{"range across classes", telegram, "cat k[A-z]y", "the range A-z"},
		{"globstar", telegram, "ls docs/**", "globstar"},
		{"globstar in a folder", telegram, "cat **/a.md", "globstar"},
		{"extglob", telegram, "cat ?(k)ey", "cannot be checked"},
		{"quoted set", telegram, "git log -p -- 'k[!x]y'", ""},
		{"known set matching the link", telegram, "cat k[a-z]y", "no headless run may read"},
		{"any case (nocaseglob)", telegram, "cat K*", "no headless run may read"},
		{"question mark", telegram, "cat k?y", "no headless run may read"},
		{"escaped wildcard", telegram, `cat k\*`, ""},
		{"quoted negated set", telegram, `grep -n '[^a-z]' README.md`, ""},
		{"quoted class", telegram, `grep -c "[[:space:]]" README.md`, ""},
		{"quoted double star", telegram, `grep -rn --include='**.md' x .`, ""},
		{"plain set", telegram, "cat [R]EADME.md docs/[a-z].md", ""},
		{"unclosed bracket", telegram, "cat README[.md", ""},
		{"cli: private through a negated set", cli, "cat ~/.ss[!x]/id_ed25519", "no headless run may read"},
		{"cli: a class elsewhere", cli, "ls docs/[[:upper:]]*", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.command}), Cwd: f.dir})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("%q refused: %v", c.command, err)
			case c.want != "" && err == nil:
				t.Fatalf("%q allowed", c.command)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("%q: reason %q, want it to say %q", c.command, err, c.want)
			}
		})
	}
}

// plantFixture is newGuardFixture with a folder that has a HEAD (the person's bare repository,
// bare/) and a link to a .git folder (lnk -> proj/.git).
func plantFixture(t *testing.T) guardFixture {
	t.Helper()
	f := newGuardFixture(t)
	for _, d := range []string{"bare/objects", "bare/refs", "proj/.git"} {
		if err := os.MkdirAll(filepath.Join(f.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.dir, "bare", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.dir, "proj", ".git"), filepath.Join(f.dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	return f
}

// Issue 61, items 3 and 11: a run whose policy does not allow everything writes no plant with its
// file tools: no HEAD, nothing in a folder with a HEAD, no .git, agent, editor or hook settings
// and no agent instructions, at any depth and in any case.
func TestGuardPlants(t *testing.T) {
	f := plantFixture(t)
	web := f.guard(t, Policy{}, ChannelWeb)
	cli := f.guard(t, Policy{}, ChannelCLI)
	for _, c := range []struct {
		path string
		want string // a part of the refusal; "" when allowed
	}{
		{"HEAD", "a file named HEAD"},
		{"trap/HEAD", "a file named HEAD"},
		{"trap/head", "a file named HEAD"},
		{"proj/.git/config", "programs to run"},
		{"a/b/.claude/settings.json", "programs to run"},
		{"sub/.mcp.json", "programs to run"},
		{"sub/.CLAUDE/settings.json", "programs to run"},
		{"sub/.git./config", "programs to run"},
		{"sub/.gi\u200bt/config", "programs to run"},
		{".envrc", "programs to run"},
		{"docs/.vscode/tasks.json", "programs to run"},
		{".idea/workspace.xml", "programs to run"},
		{".husky/pre-commit", "programs to run"},
		{"tools/.githooks/pre-commit", "programs to run"},
		{".pre-commit-config.yaml", "programs to run"},
		{".codex/config.toml", "programs to run"},
		{".gemini/settings.json", "programs to run"},
		{".copilot/config.json", "programs to run"},
		{"docs/CLAUDE.md", "instructions to follow"},
		{"CLAUDE.local.md", "instructions to follow"},
		{"sub/AGENTS.md", "instructions to follow"},
		{"GEMINI.md", "instructions to follow"},
		{"bare/config", "which has a HEAD"},
		{"bare/hooks/post-checkout", "which has a HEAD"},
		{"lnk/config", "programs to run"},
		{"docs/notes.md", ""},
		{"trap/config", ""},
		{"trap/objects/info/alternates", ""},
		{"HEADLINES.md", ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			for _, tool := range []string{"Write", "Edit", "MultiEdit", "NotebookEdit"} {
				key := "file_path"
				if tool == "NotebookEdit" {
					key = "notebook_path"
				}
				err := web.CheckCall(Call{Tool: tool, Input: mustJSON(map[string]any{key: filepath.Join(f.dir, c.path)}), Cwd: f.dir})
				switch {
				case c.want == "" && err != nil && tool != "MultiEdit" && tool != "NotebookEdit":
					t.Errorf("%s %s refused: %v", tool, c.path, err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Errorf("%s %s: err = %v, want it refused saying %q", tool, c.path, err, c.want)
				}
			}
			if err := cli.CheckCall(Call{Tool: "Write", Input: mustJSON(map[string]any{"file_path": filepath.Join(f.dir, c.path)}), Cwd: f.dir}); err != nil {
				t.Errorf("cli (allows everything): Write %s refused: %v", c.path, err)
			}
		})
	}
}

// Issue 61, item 3: shell commands write no plant either: the arguments of the programs that
// create or change files, output options, redirections; nor do they make a repository or change
// git's configuration, or write names the guard cannot see.
func TestGuardShellPlants(t *testing.T) {
	f := plantFixture(t)
	web := f.guard(t, Policy{}, ChannelWeb)
	rules := f.guard(t, Policy{Channels: map[string]Rule{"web": {Allow: []string{
		"Bash(cp:*)", "Bash(mv:*)", "Bash(ln:*)", "Bash(tee:*)", "Bash(git init:*)", "Bash(git clone:*)",
		"Bash(git config:*)", "Bash(git mv:*)", "Bash(git worktree:*)", "Bash(tar:*)", "Bash(sort:*)", "Bash(sed:*)",
	}}}}, ChannelWeb)
	bash := f.guard(t, Policy{Channels: map[string]Rule{"web": {Allow: []string{"Bash"}}}}, ChannelWeb)
	for _, c := range []struct {
		g       Guard
		command string
		want    string // a part of the refusal; "" when allowed
	}{
		{web, "touch HEAD", "a file named HEAD"},
		{web, "mkdir -p trap/refs trap/objects && touch trap/HEAD", "a file named HEAD"},
		{web, "touch -c trap/Head", "a file named HEAD"},
		{web, "mkdir -p proj/sub/.git", "programs to run"},
		{web, "mkdir .vscode", "programs to run"},
		{web, "touch docs/CLAUDE.md", "instructions to follow"},
		{web, "touch bare/config", "which has a HEAD"},
		{web, "mkdir bare/hooks", "which has a HEAD"},
		{web, "touch lnk/config", "programs to run"},
		{web, "touch docs/../.envrc", "programs to run"},
		{rules, "cp README.md trap/HEAD", "a file named HEAD"},
		{rules, "cp -t .claude README.md", "programs to run"},
		{rules, "cp --target-directory=.claude README.md", "programs to run"},
		{rules, "mv README.md .envrc", "programs to run"},
		{rules, "ln -s README.md HEAD", "a file named HEAD"},
		{rules, "tee -a trap/HEAD", "a file named HEAD"},
		{rules, "git init", "makes a git repository"},
		{rules, "git init --bare trap", "makes a git repository"},
		{rules, "git clone https://example.com/x.git y", "makes a git repository"},
		{rules, "git worktree add wt", "makes a git repository"},
		{rules, "git config core.fsmonitor ./run.sh", "changes a repository's configuration"},
		{rules, "git config --add core.hooksPath .", "changes a repository's configuration"},
		{rules, "git mv README.md AGENTS.md", "instructions to follow"},
		{rules, "tar xf a.tar", "extracts files"},
		{rules, "tar -cf trap/HEAD docs", "a file named HEAD"},
		{rules, "sort -o HEAD README.md", "a file named HEAD"},
		{rules, "sed -i s/a/b/ bare/config", "which has a HEAD"},
		{bash, "echo 'ref: refs/heads/main' > trap/HEAD", "a file named HEAD"},
		{bash, "cd trap && touch config", "changing folders"},
		{bash, "git -C trap mv a config", "changing folders"},
		{bash, "echo HEAD | xargs touch", "xargs touch"},
		{bash, "sh -c 'touch .git/hooks/pre-commit'", "programs to run"},
		{bash, "touch ./H*", ""},
		{web, "touch docs/new.md", ""},
		{web, "mkdir -p trap/refs trap/objects", ""},
		{web, "git add README.md", ""},
		{rules, "cp README.md docs/", ""},
		{rules, "git config --get user.name", ""},
		{rules, "git config user.name", ""},
		{rules, "tar tf a.tar", ""},
		{rules, "sed -n 1p README.md", ""},
		{web, "grep -o HEAD README.md", ""},
		{bash, "echo ok > out.txt && grep -C 2 ok out.txt", ""},
	} {
		t.Run(c.command, func(t *testing.T) {
			err := c.g.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.command}), Cwd: f.dir})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("allowed")
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("reason %q, want it to say %q", err, c.want)
			}
		})
	}
}
