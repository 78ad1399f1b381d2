package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/intentq/intentq/internal/doors/hooks"
)

// The program a hook runs: a hook whose program is gone (bin/ cleaned, the build moved) fails at
// every prompt and tool call, and the CLI goes on without intentq, so doctor names it.

// unrunnable says why the program of an intentq hook's command line cannot run, "" when it can:
// missing, not executable, or intentq-hook without the starter it hands hooks to beside it. A
// program named without its folder (a block pasted by hand) is found on the agent's PATH, which
// doctor does not know: it is not checked. setup writes full paths.
func unrunnable(cmd string) string {
	path, _ := hooks.CommandProgram(cmd)
	if !filepath.IsAbs(path) {
		return ""
	}
	if err := hooks.Runnable(path); err != nil {
		return err.Error()
	}
	if filepath.Base(path) == hooks.Binary {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), hooks.StarterBinary)); err != nil {
			return "no starter beside " + path + " (it hands it what it does not answer)"
		}
	}
	return ""
}

// unrunnableHooks are the reasons intentq's hooks among groups (a settings file's hooks by event
// name) cannot run, each once, with the events they concern.
func unrunnableHooks(byEvent map[string][]any, events []hooks.ClaudeEvent) []string {
	concern := map[string][]string{}
	var reasons []string
	for _, e := range events {
		group := hooks.Group(byEvent[e.Name], e.Arg)
		list, _ := group["hooks"].([]any)
		for _, h := range list {
			entry, _ := h.(map[string]any)
			cmd, _ := entry["command"].(string)
			if !hooks.IsIntentqHook(cmd) {
				continue
			}
			if why := unrunnable(cmd); why != "" {
				if _, seen := concern[why]; !seen {
					reasons = append(reasons, why)
				}
				concern[why] = append(concern[why], e.Name)
			}
		}
	}
	out := make([]string, 0, len(reasons))
	for _, why := range reasons {
		out = append(out, fmt.Sprintf("%s (%s)", why, strings.Join(slices.Compact(concern[why]), ", ")))
	}
	return out
}
