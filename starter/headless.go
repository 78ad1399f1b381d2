package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/intentapi"
	"github.com/intentq/intentq/workflows"
)

func newPrompt() *cobra.Command {
	var session, channel, key string
	var wait, asJSON, safe bool
	cmd := &cobra.Command{
		Use:   "prompt --session S [--channel cli|telegram|web] TEXT|-",
		Short: "queue a prompt on a headless session (FIFO, one run at a time); the same --key twice runs once",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := requireFlags(cmd, "session"); err != nil {
				return err
			}
			text, err := fromStdin(cmd, "prompt", a[0], 1<<20)
			if err != nil {
				return err
			}
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			if s, ok := cfg.Sessions[session]; !ok || s.Mode != config.ModeHeadless {
				return fmt.Errorf("session %q is not a headless session in the config", session)
			}
			req, err := intentapi.PreparePrompt(cfg, session, workflows.PromptRequest{Key: key, Channel: channel, Text: text}, safe)
			if err != nil {
				return err
			}
			rec, err := intentapi.SubmitPrompt(cmd.Context(), c, session, req)
			if err != nil {
				return err
			}
			for wait && rec.FinishedAt == nil {
				time.Sleep(time.Second)
				st, err := intentapi.Audit(cmd.Context(), c, session)
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
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish and print its answer")
	cmd.Flags().BoolVar(&safe, "safe", false, "safe to repeat: retry failed runs even when the policy allows a non-idempotent tool (git push)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the prompt record as JSON")
	return cmd
}

func newSessionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "headless sessions: prompts by status and cumulative cost",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			var all []workflows.HeadlessState
			for _, name := range cfg.SessionNames() {
				if cfg.Sessions[name].Mode != config.ModeHeadless {
					continue
				}
				st, err := intentapi.Audit(cmd.Context(), c, name)
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
			fmt.Fprintln(tw, "SESSION\tQUEUED\tRUNNING\tSUCCEEDED\tFAILED\tCOST USD")
			for _, st := range all {
				counts := map[string]int{}
				for _, p := range st.Prompts {
					counts[p.Status]++
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", st.Config.Name, counts[workflows.PromptQueued]+counts[workflows.PromptWaiting],
					counts[workflows.PromptRunning], st.Succeeded, st.Failed, st.CostUSD)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions' audits as JSON")
	return cmd
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
			costs := map[string]float64{}
			for _, name := range cfg.SessionNames() {
				if cfg.Sessions[name].Mode != config.ModeHeadless || (len(a) == 1 && a[0] != name) {
					continue
				}
				st, err := intentapi.Audit(cmd.Context(), c, name)
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
