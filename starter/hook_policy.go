package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/internal/toolpolicy"
)

// newHookPolicy is `starter hook policy --guard FILE`: the PreToolUse hook the worker gives
// every headless run of a CLI that takes a settings file (Claude Code). It checks the tool call
// on standard input against the run's guard (its tool policy and work folder, written by the
// worker) and prints Claude Code's deny with the reason, or nothing to let the call go on. It
// loads no config and fails closed: a guard or a call it cannot read is a deny, and so is a
// check that takes longer than toolpolicy.CheckBudget; a deny it cannot write exits with
// status 2, which Claude Code takes as a block too.
func newHookPolicy() *cobra.Command {
	var guard string
	cmd := &cobra.Command{
		Use:   "policy --guard FILE",
		Short: "PreToolUse hook of headless runs: deny tool calls outside the run's policy and work folder",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := toolpolicy.PreToolUse(guard, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("hook policy: the answer could not be written (%w): call refused", err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&guard, "guard", "", "the run's guard, written by the worker")
	return cmd
}
