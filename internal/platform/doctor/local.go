package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/spool"
	"github.com/intentq/intentq/internal/doors/telegram"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/platform/plugin"
)

// Local checks the parts beside Temporal: tmux panes, ntfy, Telegram, the hooks of each CLI the
// sessions use (Codex's in $CODEX_HOME, else ~/.codex).
func Local(ctx context.Context, cfg *config.Config) Report {
	var r Report
	tm := &activities.Tmux{}
	for _, name := range cfg.SessionNames() {
		s := cfg.Sessions[name]
		if s.Mode != config.ModeTmux {
			continue
		}
		check := "tmux " + name
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		front, err := tm.Foreground(tctx, s.TmuxTarget)
		cancel()
		if err != nil {
			res := Result{Name: check, Detail: err.Error(),
				Hint: fmt.Sprintf("start the agent in tmux (starter run-agent, or tmux new -s %s), or fix sessions.%s.tmux_target", strings.Split(s.TmuxTarget, ":")[0], name)}
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeTmuxTargetMissing {
				if st, serr := os.Stat(cfg.HistoryPath(name)); serr == nil && st.Size() > 0 {
					// It ran here before (intentq typed or handed messages to it): its agent
					// ended and tmux closed the pane; messages wait for it.
					res.Detail = fmt.Sprintf("no agent: the pane %s is gone (the agent ran there before); its messages wait", s.TmuxTarget)
					res.Hint = fmt.Sprintf("start it again: starter run-agent %s", name)
				} else {
					// No pane yet: a setup step, not a failure of what runs.
					res.Status, res.Detail = StatusWarn, "no tmux pane yet: "+err.Error()
				}
			}
			r = append(r, res)
			continue
		}
		if want := cfg.CLIs[s.CLI].Processes(); !s.Human && len(want) > 0 && !slices.Contains(want, front) {
			// The CLI exited (a shell shows) or another program runs there: intentq types
			// nothing into it, and deliveries wait.
			r = append(r, Result{Name: check, Detail: fmt.Sprintf("pane %s shows %q, not %s: nothing is typed there, deliveries wait", s.TmuxTarget, front, strings.Join(want, " or ")),
				Hint: fmt.Sprintf("start the agent again (starter run-agent %s), or set clis.%s.process_names", name, s.CLI)})
			continue
		}
		r = append(r, Result{Name: check, OK: true, Detail: "pane " + s.TmuxTarget + " is live, " + front + " in front" + AgentBinding(ctx, cfg, name)})
	}
	if cfg.Ntfy.URL != "" {
		r = append(r, checkNtfy(ctx, cfg.Ntfy.URL))
	}
	if cfg.Telegram.Token.IsSet() {
		r = append(r, checkTelegram(ctx, cfg), PollerConflict(cfg.PollerStatusFile(), time.Now()))
	}
	codexHome, err := hooks.CodexHome("")
	if err != nil {
		codexHome = filepath.Join(os.Getenv("HOME"), ".codex")
	}
	r = append(r, CLIHooks(cfg, codexHome)...)
	r = append(r, HookErrors(cfg.DataDir))
	if cfg.Claude.PatchPlugin {
		r = append(r, PluginPatch(cfg), PluginCanary(cfg))
	}
	for _, s := range cfg.Sessions {
		if s.Mode == config.ModeHeadless {
			r = append(r, Sandbox(cfg))
			break
		}
	}
	return r
}

// AgentBinding says how the agent in session name's pane is known to its hooks (issue 37):
// started by `starter run-agent` (the pane's @agent_id), or started by hand and bound by the
// receipt of a block intentq typed (hooks.BindByReceipt), or why not yet; "" for the person's
// pane.
func AgentBinding(ctx context.Context, cfg *config.Config, name string) string {
	s := cfg.Sessions[name]
	if s.Human {
		return ""
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	out, err := exec.CommandContext(tctx, "tmux", "show-options", "-pqv", "-t", activities.ExactTarget(s.TmuxTarget), "@agent_id").Output()
	cancel()
	if err == nil && strings.TrimSpace(string(out)) == name {
		return "; its agent was started by starter run-agent (its hooks name the session)"
	}
	bound, refused := hooks.Bindings(cfg.DataDir, name)
	if len(bound) > 0 {
		b := bound[0]
		return fmt.Sprintf("; its agent was started by hand, bound by %s (%s session %s)", b.How, b.CLI, b.ID)
	}
	if refused != "" {
		return "; its agent was started by hand and is not bound: " + refused + " (messages are typed when it idles)"
	}
	return "; no agent is bound to it yet: one started by hand is bound by the first message typed into it (until then messages are typed when it idles)"
}

// Sandbox reports whether the headless sessions' runs can be confined by the kernel here
// (scheduler.sandbox): without it no run starts, and with the sandbox off the tool policy is
// all that guards the machine.
func Sandbox(cfg *config.Config) Result {
	const name = "headless sandbox"
	if cfg.Scheduler.Sandbox == headless.SandboxOff {
		return Result{Name: name, Status: StatusWarn, Detail: "scheduler.sandbox is off: headless runs are not confined by the kernel, only by the tool policy",
			Hint: "install bubblewrap (apt-get install bubblewrap) and remove scheduler.sandbox: off"}
	}
	if err := headless.CanConfine(); err != nil {
		return Result{Name: name, Detail: "headless runs cannot start: " + err.Error(),
			Hint: "apt-get install bubblewrap; where user namespaces are off, enable them (sysctl kernel.unprivileged_userns_clone=1) or set scheduler.sandbox: off"}
	}
	return Result{Name: name, OK: true, Detail: "bubblewrap confines every headless run"}
}

// PluginPatch reports whether the Telegram plugin carries the current ingest block.
func PluginPatch(cfg *config.Config) Result {
	t, state, err := plugin.Check(cfg)
	switch {
	case err != nil:
		return Result{Name: "plugin patch", Detail: err.Error(), Hint: "check claude.home, claude.settings and ingest.token"}
	case state != plugin.StatePatched:
		return Result{Name: "plugin patch", Detail: fmt.Sprintf("%s is %s", t.ServerTS, state), Hint: "run starter patch-plugin (the worker re-applies it within a minute)"}
	}
	return Result{Name: "plugin patch", OK: true, Detail: t.ServerTS + " patched"}
}

// checkNtfy asks the server's health endpoint; nothing is published.
func checkNtfy(ctx context.Context, base string) Result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := strings.TrimRight(base, "/") + "/v1/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Result{Name: "ntfy", Detail: err.Error(), Hint: "fix ntfy.url"}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Result{Name: "ntfy", Detail: err.Error(), Hint: "check ntfy.url and the network; reminders keep being retried meanwhile"}
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return Result{Name: "ntfy", Detail: fmt.Sprintf("%s answered %s", url, resp.Status), Hint: "the ntfy server has trouble"}
	}
	return Result{Name: "ntfy", OK: true, Detail: base + " reachable (no message sent)"}
}

// checkTelegram calls getMe with the bot token.
func checkTelegram(ctx context.Context, cfg *config.Config) Result {
	endpoint := cfg.Telegram.APIEndpoint
	if endpoint == "" {
		endpoint = tgbotapi.APIEndpoint
	}
	done := make(chan Result, 1)
	go func() {
		bot, err := tgbotapi.NewBotAPIWithClient(cfg.Telegram.Token.Reveal(), endpoint, &http.Client{Timeout: 5 * time.Second})
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), cfg.Telegram.Token.Reveal(), "<token>")
			done <- Result{Name: "telegram", Detail: "getMe: " + msg, Hint: "check telegram.token (BotFather) and the network"}
			return
		}
		done <- Result{Name: "telegram", OK: true, Detail: "bot @" + bot.Self.UserName + " answers getMe"}
	}()
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		return Result{Name: "telegram", Detail: ctx.Err().Error()}
	}
}

// Hooks looks for intentq's three hooks in the secretary's settings.json.
func Hooks(path string) Result {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Result{Name: "hooks", Status: StatusWarn, Detail: "not installed yet: " + path + " does not exist", Hint: "starter setup installs them (claude.settings)"}
	}
	if err != nil {
		return Result{Name: "hooks", Detail: err.Error()}
	}
	var settings struct {
		Hooks map[string][]any `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		return Result{Name: "hooks", Detail: fmt.Sprintf("%s: %v", path, err), Hint: "fix the JSON"}
	}
	var missing []string
	for _, e := range hooks.ClaudeEvents {
		if hooks.Group(settings.Hooks[e.Name], e.Arg) == nil {
			missing = append(missing, e.Name)
		}
	}
	if len(missing) > 0 {
		return Result{Name: "hooks", Status: StatusWarn, Detail: fmt.Sprintf("not installed yet: %s lacks %s", path, strings.Join(slices.Sorted(slices.Values(missing)), ", ")),
			Hint: "starter setup installs them"}
	}
	if bad := unrunnableHooks(settings.Hooks, hooks.ClaudeEvents); len(bad) > 0 {
		return Result{Name: "hooks", Detail: fmt.Sprintf("the hooks in %s cannot run: %s", path, strings.Join(bad, "; ")),
			Hint: "make build puts worker, starter and intentq-hook in bin/; then starter setup points the hooks at them"}
	}
	return Result{Name: "hooks", OK: true, Detail: strings.Join(hooks.Events(), ", ") + " in " + path}
}

// HookErrors reports the last problem that made the hooks allow without doing their work; the
// next hook run that works clears it.
func HookErrors(dataDir string) Result {
	rec, err := hooks.LastError(dataDir)
	switch {
	case err != nil:
		return Result{Name: "hook errors", Detail: err.Error()}
	case rec == nil:
		return Result{Name: "hook errors", OK: true, Detail: "none: the last hook run loaded its config"}
	}
	return Result{Name: "hook errors",
		Detail: fmt.Sprintf("since %s (%d runs, last %s) the hooks allow everything: %s", rec.Since.Local().Format(time.RFC3339), rec.Count, rec.At.Local().Format(time.RFC3339), rec.Cause),
		Hint:   "fix the config the agent's hooks see (its environment and file); the next hook run clears this"}
}

// PluginCanary reports what the patched plugin itself recorded: which file runs (the canary of
// its last start, found out rather than assumed) and whether that is a copy intentq patched, and
// the last time the block failed for a message.
func PluginCanary(cfg *config.Config) Result {
	loaded, failed, err := spool.Last(cfg.SpoolDir())
	switch {
	case err != nil:
		return Result{Name: "plugin canary", Detail: err.Error()}
	case loaded == nil:
		return Result{Name: "plugin canary", Status: StatusWarn, Detail: "the patched plugin has not started yet (no canary in " + cfg.SpoolDir() + ")",
			Hint: "start the agent with starter run-agent"}
	}
	if failed != nil && !failed.At.Before(loaded.At) {
		return Result{Name: "plugin canary", Detail: fmt.Sprintf("the block failed at %s for chat %s message %s: %s", failed.At.Local().Format(time.RFC3339),
			string(failed.ChatID), string(failed.MessageID), failed.Error), Hint: "run starter patch-plugin (the plugin changed?) and restart the agent"}
	}
	patched := map[string]bool{}
	if t, err := plugin.Resolve(cfg.Claude.Home, cfg.Claude.Settings); err == nil {
		patched[t.ServerTS] = true
		if ct, ok, err := plugin.CacheTarget(t); err == nil && ok {
			patched[ct.ServerTS] = true
		}
	}
	file := loaded.File
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	if !patched[file] {
		return Result{Name: "plugin canary", Detail: fmt.Sprintf("the plugin ran from %s, a copy intentq did not patch", loaded.File),
			Hint: "run starter patch-plugin, then restart the agent"}
	}
	detail := fmt.Sprintf("patched block loaded at %s from %s (pid %d)", loaded.At.Local().Format(time.RFC3339), loaded.File, loaded.PID)
	if failed != nil {
		detail += fmt.Sprintf("; it last failed at %s (before this start)", failed.At.Local().Format(time.RFC3339))
	}
	return Result{Name: "plugin canary", OK: true, Detail: detail}
}

// PollerConflict reports another poller on the bot token: getUpdates answering 409 Conflict
// within the last 5 minutes.
func PollerConflict(statusFile string, now time.Time) Result {
	st, err := telegram.ReadPollerStatus(statusFile)
	switch {
	case err != nil:
		return Result{Name: "telegram poller", Detail: err.Error()}
	case st.ConflictSince != nil && st.LastConflictAt != nil && now.Sub(*st.LastConflictAt) < 5*time.Minute:
		return Result{Name: "telegram poller", Detail: fmt.Sprintf("another poller holds the bot token: 409 Conflict since %s", st.ConflictSince.Local().Format(time.RFC3339)),
			Hint: "use one poller per token: stop the Claude Code Telegram plugin (or a second worker), or drop telegram.token"}
	case st.LastPollAt == nil:
		return Result{Name: "telegram poller", Status: StatusWarn, Detail: "has not polled yet (is the worker running?)"}
	}
	return Result{Name: "telegram poller", OK: true, Detail: "polling alone, last at " + st.LastPollAt.Local().Format(time.RFC3339)}
}
