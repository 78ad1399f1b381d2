package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/policy"
	sessionapi "github.com/intentq/intentq/internal/session"
	"github.com/intentq/intentq/workflows"
)

func newPrompt() *cobra.Command {
	var session, channel, key, textFile string
	var wait, asJSON, safe bool
	cmd := &cobra.Command{
		Use:   "prompt --session S [--channel cli|telegram|web] [--text-file PATH | TEXT|-]",
		Short: "queue a prompt on a headless session (FIFO, one run at a time); the same --key twice runs once",
		Long: "prompt queues a prompt on a headless session. The prompt is read from standard input, or from\n" +
			"--text-file; a TEXT argument also works but is " + inlineTextNote + ".",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := requireFlags(cmd, "session"); err != nil {
				return err
			}
			var inline *string
			if len(a) == 1 {
				inline = &a[0]
			}
			text, err := readText(cmd, "prompt", inline, textFile, 1<<20)
			if err != nil {
				return err
			}
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			rec, err := headless.Submit(cmd.Context(), c, cfg, session, workflows.PromptRequest{Key: key, Channel: channel, Text: text}, safe)
			if err != nil {
				return err
			}
			for wait && rec.FinishedAt == nil {
				time.Sleep(time.Second)
				st, err := headless.Audit(cmd.Context(), c, session)
				if err != nil {
					return err
				}
				for _, p := range st.Prompts {
					if p.ID == rec.ID {
						rec = p
					}
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rec)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", rec.ID, rec.Status)
			if rec.Result != "" {
				fmt.Fprintln(cmd.OutOrStdout(), rec.Result)
			}
			if rec.Status == workflows.PromptFailed {
				return fmt.Errorf("%s failed: %s", rec.ID, rec.Error)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "headless session (required)")
	cmd.Flags().StringVar(&channel, "channel", "cli", "channel: cli, telegram or web")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key (default: a new prompt each time)")
	cmd.Flags().StringVar(&textFile, "text-file", "", textFileHelp)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish and print its answer")
	cmd.Flags().BoolVar(&safe, "safe", false, "safe to repeat: retry failed runs even when the policy allows a non-idempotent tool (git push)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the prompt record as JSON")
	return cmd
}

func newSessionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "sessions: the agent's state from its hooks (typing sessions); prompts by status and cost (headless)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			var all []workflows.HeadlessState
			for _, name := range cfg.HeadlessSessions("") {
				st, err := headless.Audit(cmd.Context(), c, name)
				if err != nil {
					return err
				}
				all = append(all, st)
			}
			if asJSON {
				if all == nil {
					all = []workflows.HeadlessState{}
				}
				return printJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			if len(all) > 0 {
				fmt.Fprintln(tw, "SESSION\tQUEUED\tRUNNING\tSUCCEEDED\tFAILED\tCOST USD")
			}
			for _, st := range all {
				counts := map[string]int{}
				for _, p := range st.Prompts {
					counts[p.Status]++
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", st.Config.Name, counts[workflows.PromptQueued]+counts[workflows.PromptWaiting],
					counts[workflows.PromptRunning], st.Succeeded, st.Failed, st.CostUSD)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			// Typing sessions: the agent's state as its hooks report it.
			tw = tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			header := false
			for _, name := range cfg.SessionNames() {
				if cfg.Sessions[name].Mode == config.ModeHeadless {
					continue
				}
				v, err := sessionapi.View(cmd.Context(), c, name)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", name, tclient.Refusal(err))
					continue
				}
				if !header {
					fmt.Fprintln(tw, "SESSION\tAGENT\tSINCE\tLAST HOOK\tWAITING\tHANDED OVER\tDELIVERED\tFAILED")
					header = true
				}
				state, since, last := agentColumns(v.Agent)
				if strings.HasPrefix(v.WaitsFor, "no agent") {
					state = "no agent" // its pane is gone or shows a shell, whatever its hooks said last
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", name, state, since, last, len(v.Queued), len(v.Offered), v.Delivered, v.Failed)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the headless sessions' audits as JSON (a typing session: session show NAME --json)")
	return cmd
}

// agentColumns are the agent's state, since when, and its last hook with its age.
func agentColumns(a *workflows.AgentState) (state, since, last string) {
	if a == nil {
		return "unknown (no hook yet)", "-", "-"
	}
	ago := func(t time.Time) string { return time.Since(t).Round(time.Second).String() + " ago" }
	state = a.State
	if state == workflows.AgentGone {
		state = "no agent (it exited)"
	}
	return state, ago(a.Since), a.Event + " " + ago(a.At)
}

func newCost() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cost [SESSION]",
		Short: "cumulative cost of headless runs, per session or for one",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			only := ""
			if len(a) == 1 {
				only = a[0]
			}
			costs := map[string]float64{}
			for _, name := range cfg.HeadlessSessions(only) {
				st, err := headless.Audit(cmd.Context(), c, name)
				if err != nil {
					return err
				}
				costs[name] = st.CostUSD
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), costs)
			}
			for _, name := range cfg.SessionNames() {
				if v, ok := costs[name]; ok {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%.4f USD\n", name, v)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {session: cost} as JSON")
	return cmd
}

func newCancel() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel PROMPT-ID",
		Short: "cancel a queued or running headless prompt (<session>#<n>); it is not retried",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			session, _, ok := strings.Cut(a[0], "#")
			if !ok || session == "" {
				return usage(cmd, fmt.Errorf("%q is not a prompt ID (<session>#<n>)", a[0]))
			}
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			rec, err := headless.Cancel(cmd.Context(), c, session, a[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", rec.ID, rec.Status)
			return nil
		},
	}
}

func newSessionShow() *cobra.Command {
	var asJSON bool
	show := &cobra.Command{
		Use:   "show SESSION",
		Short: "a typing session's agent state (from its hooks) and queue; a headless session's prompts, invocations and cost",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			if sc, ok := cfg.Sessions[a[0]]; ok && sc.Mode != config.ModeHeadless {
				v, err := sessionapi.View(cmd.Context(), c, a[0])
				if err != nil {
					return tclient.Refusal(err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), v)
				}
				state, since, last := agentColumns(v.Agent)
				fmt.Fprintf(cmd.OutOrStdout(), "session %s (%s, %s): agent %s since %s, last hook %s\n", a[0], v.Config.TmuxTarget, v.Config.CLI, state, since, last)
				host := cfg.HostOf(a[0])
				served := "no worker polls its task queue: its messages wait"
				if machines, identities, err := doctor.HostPollers(cmd.Context(), c, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, host)); err != nil {
					served = err.Error()
				} else if len(machines) > 0 {
					served = "served by " + strings.Join(identities, ", ")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "host %s: %s\n", host, served)
				fmt.Fprintf(cmd.OutOrStdout(), "waiting %d, handed over and not committed %d, delivered %d, failed %d\n", len(v.Queued), len(v.Offered), v.Delivered, v.Failed)
				if v.BusySince != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "not typing since %s: %s\n", v.BusySince.Local().Format(time.RFC3339), policy.Or(v.WaitsFor, "the pane is busy"))
				}
				return nil
			}
			st, err := headless.Audit(cmd.Context(), c, a[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "session %s: %d succeeded, %d failed, %.4f USD, resumes %s\n", st.Config.Name, st.Succeeded, st.Failed, st.CostUSD, st.ResumeID)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PROMPT\tCHANNEL\tSTATUS\tATTEMPTS\tCOST USD\tQUEUED")
			for _, p := range st.Prompts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.4f\t%s\n", p.ID, p.Channel, p.Status, len(p.Invocations), p.CostUSD, p.QueuedAt.Local().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the audit as JSON")
	cmd := &cobra.Command{Use: "session", Short: "one session: its agent's state, or its headless prompts"}
	cmd.AddCommand(show)
	return cmd
}
