// Command starter is intentq's command line: it records, lists and closes intents, runs the
// Claude Code hooks, patches the plugin and checks the deployment (doctor). Exit codes: 0 done,
// 1 failed (or a check failed), 2 bad usage.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/logging"
	"github.com/intentq/intentq/internal/base/private"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	private.Umask()
	root := newRoot()
	err := root.Execute()
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "intentq:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "intentq:", err)
	os.Exit(1)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "intentq: every message to an AI agent session recorded, delivered, reminded and answered",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	config.RegisterFlags(root.PersistentFlags())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, err: fmt.Errorf("%w\n%s", err, cmd.UsageString())}
	})
	root.AddCommand(newDoctor(), newRecord(), newPending(), newShow(), newClose(), newLink(), newIgnore(), newRemindNow(), newHistory(), newInbox(), newHook(), newPatchPlugin(), newRunAgent(), newPrompt(), newSessionsCmd(), newCost(), newCancel(), newSessionShow(), newWatch(), newSetup(), newMCP(), newReply(), newKeygen(), newUI(), newApprovals())
	return root
}

// usage marks err as a usage error (exit 2) and shows the command's usage line.
func usage(cmd *cobra.Command, err error) error {
	return &exitError{code: 2, err: fmt.Errorf("%w\nusage: %s", err, cmd.UseLine())}
}

// args wraps a positional-argument check so that a wrong count is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usage(cmd, err)
		}
		return nil
	}
}

// requireFlags fails with a usage error when a required flag was not given.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usage(cmd, fmt.Errorf("missing %s", strings.Join(missing, ", ")))
	}
	return nil
}

// load reads the configuration with the command's flags, and a logger for a CLI: warnings and
// errors only, unless log.level asks for debug.
func load(cmd *cobra.Command) (*config.Config, *zap.Logger, error) {
	cfg, err := config.Load(cmd.Flags())
	if err != nil {
		return nil, nil, err
	}
	logCfg := cfg.Log
	if logCfg.Level != "debug" {
		logCfg.Level = "warn"
	}
	logger, err := logging.New(logCfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, logger, nil
}
