package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/platform/doctor"
)

func newDoctor() *cobra.Command {
	var asJSON, notify bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check config, Temporal, the namespace, a worker on the task queue, the Web UI and ingest",
		Long: "doctor prints one line per check with ok, WARN (a setup step not done yet), FAIL or -- (not\n" +
			"checked) and a hint, and exits 1 when a check fails (0 with warnings only). It runs a probe\n" +
			"workflow, so it proves that a worker really executes tasks. With --notify (the watchdog timer\n" +
			"of `starter setup --service` runs it every 5 minutes) it pushes to ntfy once when checks turn\n" +
			"FAIL and once when they recover, never once per run (state in data_dir/doctor).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var report doctor.Report
			cfg, logger, err := load(cmd)
			if err != nil {
				report = doctor.ConfigFailed(err)
			} else {
				report = doctor.Run(cmd.Context(), cfg, logger)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = report.WriteJSON(out)
			} else {
				err = report.WriteText(out)
			}
			if err != nil {
				return err
			}
			if notify && cfg != nil {
				var pub doctor.Publisher
				if cfg.Ntfy.URL != "" {
					pub = &activities.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token.Reveal()}
				}
				if _, err := doctor.Notify(cmd.Context(), report, pub, cfg.Ntfy.Topic, doctor.NotifyStateFile(cfg.DataDir), time.Now()); err != nil {
					return err
				}
			}
			if !report.OK() {
				return &exitError{code: 1, err: errors.New("")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as a JSON array")
	cmd.Flags().BoolVar(&notify, "notify", false, "push to ntfy when checks turn FAIL and when they recover (for the watchdog timer)")
	return cmd
}
