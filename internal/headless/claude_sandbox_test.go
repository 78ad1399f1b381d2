package headless

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/peers"
)

// The real Claude Code runs headless inside the sandbox: a home of its own (empty but for the
// login), the work folder read-only, the API reached over the network.
func TestClaudeCodeRunsInTheSandbox(t *testing.T) {
	bw := bwrapOrFail(t)
	claude := peers.Claude(t)
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Turn {
		if strings.Contains(r.SinceAssistant(), "confined") {
			return fakeanthropic.Turn{Text: "done"}
		}
		return fakeanthropic.Turn{ToolName: "Bash", ToolInput: map[string]any{"command": "touch planted; echo confined $?", "description": "x"}}
	})
	defer api.Close()
	root := t.TempDir()
	sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: filepath.Join(root, "work"), Home: filepath.Join(root, "home"),
		PersonHome: os.Getenv("HOME"), Programs: programFolders(claude)}
	for _, d := range []string{sb.Work, sb.Home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	prog, args := sb.Wrap(claude, []string{"-p", "--output-format", "json", "--allowedTools", "Bash"})
	cmd := exec.Command(prog, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + sb.Home, "TMPDIR=/tmp", "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=sk-ant-test-0123456789abcdefghij", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, GitEnv()...)
	cmd.Stdin = strings.NewReader("try it")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"result":"done"`) {
		t.Fatalf("claude in the sandbox: %v\n%s", err, out)
	}
	reqs := api.Requests()
	if got := reqs[len(reqs)-1].SinceAssistant(); !strings.Contains(got, "Read-only file system") || !strings.Contains(got, "confined 1") {
		t.Errorf("the Bash tool's result: %q, want the kernel's refusal", got)
	}
	if _, err := os.Stat(filepath.Join(sb.Work, "planted")); err == nil {
		t.Error("the read-only run wrote its work folder")
	}
}
