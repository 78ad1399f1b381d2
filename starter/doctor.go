package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/internal/platform/doctor"
)

func newDoctor() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check config, Temporal, the namespace, a worker on the task queue, the Web UI and ingest",
		Long: "doctor prints one line per check with ok or FAIL and a hint, and exits 1 when a check fails.\n" +
			"It runs a probe workflow, so it proves that a worker really executes tasks.",
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
			if !report.OK() {
				return &exitError{code: 1, err: errors.New("")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as a JSON array")
	return cmd
}
