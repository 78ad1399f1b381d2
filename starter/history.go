package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/activities"
)

func newHistory() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history SESSION",
		Short: "print what intentq typed into a session, in order (its history file, SPEC H1)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg, _, err := load(cmd)
			if err != nil {
				return err
			}
			if _, ok := cfg.Sessions[a[0]]; !ok {
				return fmt.Errorf("no session %q in the config (known: %v)", a[0], cfg.SessionNames())
			}
			path := cfg.HistoryPath(a[0])
			f, err := os.Open(path)
			if errors.Is(err, os.ErrNotExist) {
				if asJSON {
					return printJSON(cmd.OutOrStdout(), []activities.HistoryEntry{})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "no history yet (%s)\n", path)
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			entries, skipped, err := activities.ReadHistory(f)
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			if skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d unreadable line(s) in %s skipped\n", skipped, path)
			}
			if asJSON {
				if entries == nil {
					entries = []activities.HistoryEntry{}
				}
				return printJSON(cmd.OutOrStdout(), entries)
			}
			for _, e := range entries {
				fmt.Fprintf(cmd.OutOrStdout(), "#%d %s %s %s\n%s\n\n", e.Seq, e.Time.Local().Format(time.RFC3339), e.Kind, e.ID, e.Text)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of entries")
	return cmd
}
