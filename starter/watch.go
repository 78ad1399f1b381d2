package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// newWatch streams state changes: intents appearing and changing status, headless prompts
// moving through queued, waiting, running and their end (SPEC P10).
func newWatch() *cobra.Command {
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "watch [SESSION]",
		Short: "print intent and prompt state changes as they happen (Ctrl-C to stop)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			session := ""
			if len(a) == 1 {
				session = a[0]
			}
			seen := map[string]string{}
			report := func(id, state string) {
				if seen[id] != state {
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s\n", time.Now().Format("15:04:05"), id, state)
					seen[id] = state
				}
			}
			ticker := time.NewTicker(every)
			defer ticker.Stop()
			for {
				intents, err := intent.List(cmd.Context(), c, intent.Filter{Session: session})
				if err != nil {
					return err
				}
				for _, s := range intents {
					report(s.ID, fmt.Sprintf("%s reminders=%d", s.Status, s.Reminders))
				}
				for _, name := range cfg.HeadlessSessions(session) {
					st, err := headless.Audit(cmd.Context(), c, name)
					if err != nil {
						continue
					}
					for _, p := range st.Prompts {
						state := p.Status
						if p.Status == workflows.PromptSucceeded || p.Status == workflows.PromptFailed {
							state = fmt.Sprintf("%s attempts=%d cost=%.4f", p.Status, len(p.Invocations), p.CostUSD)
						}
						report(p.ID, state)
					}
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-ticker.C:
				}
			}
		},
	}
	cmd.Flags().DurationVar(&every, "every", time.Second, "how often to look")
	return cmd
}
