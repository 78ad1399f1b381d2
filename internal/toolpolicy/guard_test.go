package toolpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardFixture is a home with a private key, a work folder inside it with a file, a link out of
// it, and the guard of a run of the given channel written to a file.
type guardFixture struct {
	home, dir, file string
}

func newGuardFixture(t *testing.T) guardFixture {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "src", "app")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(dir, "docs"), filepath.Join(home, ".intentq")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----")
	write(filepath.Join(home, ".intentq", "access.token"), "secret")
	write(filepath.Join(home, "notes.txt"), "notes")
	write(filepath.Join(dir, "README.md"), "hello")
	if err := os.Symlink(filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "src"), filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	return guardFixture{home: home, dir: dir, file: filepath.Join(dir, "README.md")}
}

func (f guardFixture) guard(t *testing.T, p Policy, channel string) Guard {
	t.Helper()
	eff, err := p.Resolve(channel, "batch")
	if err != nil {
		t.Fatal(err)
	}
	return Guard{Policy: eff, Dir: f.dir, Home: f.home,
		Private: []string{filepath.Join(f.home, ".intentq"), filepath.Join(f.home, ".ssh")}}
}

// hook runs the PreToolUse hook as `starter hook policy` does: the guard from a file, the call
// on standard input; it returns the deny reason, or "" when the call may go on.
func hook(t *testing.T, g Guard, call string) string {
	t.Helper()
	data, _ := json.Marshal(g)
	file := filepath.Join(t.TempDir(), "guard.json")
	if err := os.WriteFile(file, data, 0o400); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := PreToolUse(file, strings.NewReader(call), &out); err != nil {
		t.Fatal(err)
	}
	if out.Len() == 0 {
		return ""
	}
	var o struct {
		HookSpecificOutput map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatalf("hook output %q: %v", out.String(), err)
	}
	h := o.HookSpecificOutput
	if h["hookEventName"] != "PreToolUse" || h["permissionDecision"] != "deny" || h["permissionDecisionReason"] == "" {
		t.Fatalf("hook output %q is not a PreToolUse deny", out.String())
	}
	return h["permissionDecisionReason"]
}

func callJSON(tool string, input map[string]any, cwd string) string {
	b, _ := json.Marshal(map[string]any{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "cwd": cwd})
	return string(b)
}

// Issue 23: a "read-only" headless run cannot read files outside its work folder: `cat` of the
// SSH key and a Read of /etc/passwd are refused by the PreToolUse hook, with the reason.
func TestHookDeniesReadsOutsideTheFolder(t *testing.T) {
	f := newGuardFixture(t)
	g := f.guard(t, Policy{}, ChannelTelegram)
	for _, c := range []struct{ tool, key, arg, want string }{
		{"Bash", "command", "cat ~/.ssh/id_ed25519", "no headless run may read"},
		{"Read", "file_path", "/etc/passwd", "outside the session's work folder"},
	} {
		reason := hook(t, g, callJSON(c.tool, map[string]any{c.key: c.arg}, f.dir))
		if !strings.Contains(reason, c.want) {
			t.Errorf("%s %s: reason %q, want it to say %q", c.tool, c.arg, reason, c.want)
		}
	}
	// Outside the folder, not private: still refused.
	if reason := hook(t, g, callJSON("Bash", map[string]any{"command": "cat " + filepath.Join(f.home, "notes.txt")}, f.dir)); !strings.Contains(reason, "outside") {
		t.Errorf("cat of a file outside the folder: %q", reason)
	}
	// Inside: allowed (no output: the CLI's own permissions still apply).
	for _, call := range []string{
		callJSON("Bash", map[string]any{"command": "cat README.md"}, f.dir),
		callJSON("Bash", map[string]any{"command": "grep -rn hello . | head -5"}, f.dir),
		callJSON("Read", map[string]any{"file_path": f.file}, f.dir),
		callJSON("Grep", map[string]any{"pattern": "hello"}, f.dir),
		callJSON("Glob", map[string]any{"pattern": "**/*.md"}, f.dir),
		callJSON("TodoWrite", map[string]any{"todos": []any{}}, f.dir),
	} {
		if reason := hook(t, g, call); reason != "" {
			t.Errorf("%s refused: %s", call, reason)
		}
	}
}

func TestGuardShellPaths(t *testing.T) {
	f := newGuardFixture(t)
	telegram := f.guard(t, Policy{}, ChannelTelegram)
	withBash := f.guard(t, Policy{Channels: map[string]Rule{"telegram": {Allow: []string{"Bash"}}}}, ChannelTelegram)
	cli := f.guard(t, Policy{}, ChannelCLI)
	hosts := f.guard(t, Policy{Sessions: map[string]Rule{"batch": {Allow: []string{"Read(//etc/hosts)", "Read(~/notes.txt)"}}}}, ChannelTelegram)
	cases := []struct {
		name    string
		g       Guard
		command string
		cwd     string
		allowed bool
	}{
		{"relative inside", telegram, "cat docs/../README.md", f.dir, true},
		{"dev null", telegram, "cat README.md 2>/dev/null", f.dir, true},
		{"parent", telegram, "cat ../../notes.txt", f.dir, false},
		{"dot dot", telegram, "ls ..", f.dir, false},
		{"absolute", telegram, "head -n 3 /etc/passwd", f.dir, false},
		{"home variable", telegram, "cat $HOME/.ssh/id_ed25519", f.dir, false},
		{"braced home", telegram, "cat ${HOME}/notes.txt", f.dir, false},
		{"other variable", telegram, "cat $SECRET_FILE", f.dir, false},
		{"input redirection", telegram, "cat < /etc/passwd", f.dir, false},
		{"link out of the folder", telegram, "cat key", f.dir, false},
		{"through a link and up", telegram, "cat up/../notes.txt", f.dir, false},
		{"glob", telegram, "cat ../*", f.dir, false},
		{"glob matching a link", telegram, "cat k*", f.dir, false},
		{"option value", telegram, "grep --file=/etc/passwd x README.md", f.dir, false},
		{"shell outside", telegram, "ls", "/etc", false},
		{"policy", telegram, "git push origin main", f.dir, false},
		{"bare Bash, sh -c", withBash, "sh -c 'cat /etc/passwd'", f.dir, false},
		{"bare Bash, wrapper option", withBash, "env -C /etc cat passwd", f.dir, false},
		{"bare Bash, cd", withBash, "cd / && cat etc/passwd", f.dir, false},
		{"bare Bash, inside", withBash, "wc -l README.md && echo done", f.dir, true},
		{"rule names the path", hosts, "cat /etc/hosts", f.dir, true},
		{"rule names a home file", hosts, "cat ~/notes.txt", f.dir, true},
		{"rule does not name it", hosts, "cat /etc/passwd", f.dir, false},
		{"cli: everything allowed", cli, "cat /etc/passwd; echo $PATH", f.dir, true},
		{"cli: not intentq's secrets", cli, "cat ~/.intentq/access.token", f.dir, false},
		{"cli: not the SSH key", cli, "cp key /tmp/k", f.dir, false},
		// Issue 33: only proven words are followed; what bash computes is refused unless the
		// policy allows everything, and then private paths are still seen where they can be.
		{"bare Bash, substitution", withBash, "echo $(date)", f.dir, false},
		{"bare Bash, other variable", withBash, "ls $TMPDIR", f.dir, false},
		{"bare Bash, pwd", withBash, `ls "$PWD" ${PWD}/docs`, f.dir, true},
		{"pwd climbing", withBash, "cat ..$PWD", f.dir, false},
		{"cli: what bash computes", cli, "cat $'x' {a,b} $1", f.dir, true},
		{"cli: a line bash reads otherwise", cli, "ls\r", f.dir, false},
		{"cli: sh -c with $HOME", cli, `sh -c "cat $HOME/.ssh/id_ed25519"`, f.dir, false},
		{"cli: sh -c with a variable", cli, `bash -c "cat ~/.ssh/id_ed25519 $X"`, f.dir, false},
		{"cli: for list", cli, `for k in ~/.ssh/*; do cat "$k"; done`, f.dir, false},
		{"cli: parameter default", cli, "cat ${K:-~/.ssh/id_ed25519}", f.dir, false},
		{"cli: output redirection", cli, "echo key >> ~/.ssh/authorized_keys", f.dir, false},
		{"cli: here-document into a file", cli, "cat > notes.md <<'EOF'\nhello\nEOF", f.dir, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.CheckCall(Call{Tool: "Bash", Input: mustJSON(map[string]any{"command": c.command}), Cwd: c.cwd})
			if (err == nil) != c.allowed {
				t.Fatalf("%q: err = %v, want allowed=%v", c.command, err, c.allowed)
			}
		})
	}
}

func TestGuardFileTools(t *testing.T) {
	f := newGuardFixture(t)
	telegram := f.guard(t, Policy{}, ChannelTelegram)
	web := f.guard(t, Policy{}, ChannelWeb)
	cli := f.guard(t, Policy{}, ChannelCLI)
	docs := f.guard(t, Policy{Channels: map[string]Rule{"web": {Allow: []string{"Read(~/notes.txt)"}, Deny: []string{"Read(./docs/private/**)"}}}}, ChannelWeb)
	noRead := f.guard(t, Policy{Channels: map[string]Rule{"web": {Deny: []string{"Read"}}}}, ChannelWeb)
	cases := []struct {
		name    string
		g       Guard
		tool    string
		input   map[string]any
		allowed bool
	}{
		{"read inside", telegram, "Read", map[string]any{"file_path": f.file}, true},
		{"read relative", telegram, "Read", map[string]any{"file_path": "README.md"}, true},
		{"read outside", telegram, "Read", map[string]any{"file_path": "/etc/passwd"}, false},
		{"read through a link", telegram, "Read", map[string]any{"file_path": filepath.Join(f.dir, "key")}, false},
		{"read home", telegram, "Read", map[string]any{"file_path": "~/notes.txt"}, false},
		{"grep elsewhere", telegram, "Grep", map[string]any{"pattern": "root", "path": "/etc"}, false},
		{"glob absolute", telegram, "Glob", map[string]any{"pattern": "/etc/*"}, false},
		{"glob climbing", telegram, "Glob", map[string]any{"pattern": "../../*.txt"}, false},
		{"LS is a read", telegram, "LS", map[string]any{"path": f.dir}, true},
		{"write denied", telegram, "Write", map[string]any{"file_path": f.file, "content": "x"}, false},
		{"write inside", web, "Write", map[string]any{"file_path": filepath.Join(f.dir, "new.txt"), "content": "x"}, true},
		{"write outside", web, "Write", map[string]any{"file_path": filepath.Join(f.home, ".bashrc"), "content": "x"}, false},
		{"edit outside", web, "Edit", map[string]any{"file_path": "/etc/hosts"}, false},
		{"pattern allows outside", docs, "Read", map[string]any{"file_path": "~/notes.txt"}, true},
		{"pattern denies inside", docs, "Read", map[string]any{"file_path": filepath.Join(f.dir, "docs", "private", "a.md")}, false},
		{"pattern leaves the rest", docs, "Read", map[string]any{"file_path": filepath.Join(f.dir, "docs", "a.md")}, true},
		{"bare deny", noRead, "Grep", map[string]any{"pattern": "x"}, false},
		{"cli reads anywhere", cli, "Read", map[string]any{"file_path": "/etc/passwd"}, true},
		{"cli: no private files", cli, "Read", map[string]any{"file_path": filepath.Join(f.home, ".intentq", "access.token")}, false},
		{"web fetch not allowed", telegram, "WebFetch", map[string]any{"url": "https://example.com"}, false},
		{"mcp not allowed", telegram, "mcp__github__create_issue", map[string]any{}, false},
		{"no path", telegram, "Read", map[string]any{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.CheckCall(Call{Tool: c.tool, Input: mustJSON(c.input), Cwd: f.dir})
			if (err == nil) != c.allowed {
				t.Fatalf("%s %v: err = %v, want allowed=%v", c.tool, c.input, err, c.allowed)
			}
		})
	}
	var out *OutsideError
	if err := telegram.CheckCall(Call{Tool: "Read", Input: mustJSON(map[string]any{"file_path": "/etc/passwd"})}); !errors.As(err, &out) || out.Path != "/etc/passwd" {
		t.Errorf("err = %v, want an OutsideError naming /etc/passwd", err)
	}
}

// The hook fails closed: no guard, or a call it cannot read, is a deny.
func TestHookFailsClosed(t *testing.T) {
	var out bytes.Buffer
	if err := PreToolUse(filepath.Join(t.TempDir(), "missing.json"), strings.NewReader(callJSON("Read", map[string]any{"file_path": "/x"}, "/")), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"deny"`) {
		t.Errorf("no guard: %q", out.String())
	}
	f := newGuardFixture(t)
	if reason := hook(t, f.guard(t, Policy{}, ChannelCLI), "not json"); reason == "" {
		t.Error("malformed input allowed")
	}
	if reason := hook(t, f.guard(t, Policy{}, ChannelCLI), `{"tool_name":"Read","tool_input":"x"}`); reason == "" {
		t.Error("malformed tool_input allowed")
	}
}

func TestPolicyRunSettings(t *testing.T) {
	p := Policy{
		Global:   Rule{Env: []string{"HTTPS_PROXY"}},
		Channels: map[string]Rule{"web": {Env: []string{"FAKE_*", "HTTPS_PROXY"}}},
		Sessions: map[string]Rule{"batch": {Dir: "~/src/app", Env: []string{"GOFLAGS"}}},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Env("web", "batch"), ","); got != "HTTPS_PROXY,FAKE_*,GOFLAGS" {
		t.Errorf("Env = %s", got)
	}
	if p.Dir("batch") != "~/src/app" || p.Dir("other") != "" {
		t.Errorf("Dir = %q, %q", p.Dir("batch"), p.Dir("other"))
	}
	for _, bad := range []Policy{
		{Global: Rule{Env: []string{"INTENTQ_TELEGRAM_TOKEN"}}},
		{Global: Rule{Env: []string{"A B"}}},
		{Channels: map[string]Rule{"web": {Dir: "/srv"}}},
		{Sessions: map[string]Rule{"batch": {Dir: "relative/dir"}}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// Review of issue 33: a run that may write files never writes where git or an agent CLI finds
// programs to run (a web run planting .claude/settings.json hooks, .mcp.json servers or a
// .git/config), which a later run or the person's own agent would start; other files it writes.
func TestGuardNeverWritesProgramConfigs(t *testing.T) {
	f := newGuardFixture(t)
	g := f.guard(t, Policy{}, ChannelWeb)
	for _, p := range []string{".claude/settings.json", ".mcp.json", ".git/config", ".git/hooks/pre-commit", ".codex/config.toml", ".gemini/settings.json"} {
		reason := hook(t, g, callJSON("Write", map[string]any{"file_path": filepath.Join(f.dir, p), "content": "x"}, f.dir))
		if !strings.Contains(reason, "programs to run") {
			t.Errorf("Write %s: %q, want refused", p, reason)
		}
		if reason := hook(t, g, callJSON("Edit", map[string]any{"file_path": filepath.Join(f.dir, p), "old_string": "a", "new_string": "b"}, f.dir)); reason == "" {
			t.Errorf("Edit %s let through", p)
		}
	}
	if reason := hook(t, g, callJSON("Write", map[string]any{"file_path": filepath.Join(f.dir, "docs", "notes.md"), "content": "x"}, f.dir)); reason != "" {
		t.Errorf("Write docs/notes.md: %q, want allowed", reason)
	}
	if reason := hook(t, g, callJSON("Read", map[string]any{"file_path": filepath.Join(f.dir, ".claude", "settings.json")}, f.dir)); reason != "" {
		t.Errorf("reading .claude/settings.json: %q, want allowed (only writes are refused)", reason)
	}
}
