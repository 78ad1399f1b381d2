package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"golang.org/x/term"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// connect loads the config and dials Temporal, failing fast when it is down.
func connect(cmd *cobra.Command) (*config.Config, client.Client, error) {
	cfg, logger, err := load(cmd)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	c, err := tclient.Dial(ctx, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	return cfg, c, nil
}

// fromStdin returns value, or standard input (without its final newline, at most max bytes)
// when value is "-".
func fromStdin(cmd *cobra.Command, what, value string, max int64) (string, error) {
	if value != "-" {
		return value, nil
	}
	data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), max))
	if err != nil {
		return "", fmt.Errorf("read %s from stdin: %w", what, err)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// textFileHelp is the help of --text-file.
const textFileHelp = "read the text from this file (- for standard input); without it and without the text, the text is read from standard input"

// inlineTextNote is said of text given on the command line.
const inlineTextNote = "visible to other users in `ps`: prefer --text-file or standard input"

// readText is a command's message text, kept out of argv unless the person put it there:
// from --text-file (file; "-" is standard input), else the text given on the command line
// (inline, nil when not given; "-" is standard input), else standard input. Both at once is a
// usage error. A final newline is dropped; more than max bytes is an error.
func readText(cmd *cobra.Command, what string, inline *string, file string, max int64) (string, error) {
	if file != "" && inline != nil {
		return "", usage(cmd, fmt.Errorf("the %s is given twice: use --text-file or the command line, not both", what))
	}
	if inline != nil && *inline != "-" {
		return *inline, nil
	}
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("read the %s: %w", what, err)
		}
		defer f.Close()
		return readCapped(f, what+" from "+file, max)
	}
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(cmd.ErrOrStderr(), "reading the %s from standard input; end it with Ctrl-D\n", what)
	}
	return readCapped(in, what+" from stdin", max)
}

// readCapped reads r to its end, without its final newline; more than max bytes is an error.
func readCapped(r io.Reader, what string, max int64) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > max {
		return "", fmt.Errorf("read %s: longer than %d bytes", what, max)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// given is the flag's value when it was set on the command line, else nil.
func given(cmd *cobra.Command, flag string, value *string) *string {
	if cmd.Flags().Changed(flag) {
		return value
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newRecord() *cobra.Command {
	var chat, msg, text, textFile, user string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "record --chat C --msg M [--text-file PATH | --text T|-]",
		Short: "record a message as an intent (text from standard input, or --text-file); the same message twice is one intent",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "chat", "msg"); err != nil {
				return err
			}
			text, err := readText(cmd, "text", given(cmd, "text", &text), textFile, 64<<20)
			if err != nil {
				return err
			}
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := intent.New(c, cfg).Record(cmd.Context(), intent.Message{
				ChatID: chat, MessageID: msg, Text: text, User: user, Source: workflows.SourceCLI,
			})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			verb := "recorded"
			if !res.Created {
				verb = "already recorded"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (session %s)\n", verb, res.ID, res.Session)
			if res.Repaired {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: invalid UTF-8 in the text was replaced with U+FFFD")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&chat, "chat", "", "chat ID (required)")
	cmd.Flags().StringVar(&msg, "msg", "", "message ID (required)")
	cmd.Flags().StringVar(&textFile, "text-file", "", textFileHelp)
	cmd.Flags().StringVar(&text, "text", "", "message text, or - for standard input; "+inlineTextNote)
	cmd.Flags().StringVar(&user, "user", "", "sender")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newPending() *cobra.Command {
	var f intent.Filter
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "list pending intents, oldest first (id, chat, age, reminders, last reminded, snippet)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			if !all && f.Status == "" {
				f.Status = workflows.StatusPending
			}
			list, err := intent.List(cmd.Context(), c, f)
			if err != nil {
				return err
			}
			// Read your writes: rows whose workflow has moved on since (a close a moment ago)
			// are left out.
			list = intent.Confirm(cmd.Context(), c, list, f.Status)
			if asJSON {
				if list == nil {
					list = []intent.Summary{}
				}
				return printJSON(cmd.OutOrStdout(), list)
			}
			return writePending(cmd.OutOrStdout(), list, time.Now())
		},
	}
	cmd.Flags().StringVar(&f.Session, "session", "", "only this session")
	cmd.Flags().StringVar(&f.ChatID, "chat", "", "only this chat")
	cmd.Flags().StringVar(&f.Status, "status", "", "this status instead of pending (linked, closed, ignored)")
	cmd.Flags().BoolVar(&all, "all", false, "intents of every status")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func writePending(w io.Writer, list []intent.Summary, now time.Time) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no intents")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCHAT\tAGE\tREMINDERS\tLAST REMINDED\tSNIPPET")
	for _, s := range list {
		last := "-"
		if s.LastRemindedAt != nil {
			last = age(now.Sub(*s.LastRemindedAt)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Status, s.ChatID, age(now.Sub(s.ReceivedAt)), s.Reminders, last, s.Snippet)
	}
	return tw.Flush()
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func newShow() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "show one intent: text, status, transitions, reminders (ID: intent/<chat>/<msg> or <chat>/<msg>)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			v, err := intent.Show(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			return writeShow(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func writeShow(w io.Writer, v workflows.IntentView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("id", v.ID)
	row("status", v.Status)
	row("session", v.Session)
	row("source", v.Source)
	row("user", v.User)
	row("received", v.ReceivedAt.Local().Format(time.RFC3339))
	row("reminders", fmt.Sprint(v.Reminders))
	if v.LastRemindedAt != nil {
		row("last reminded", v.LastRemindedAt.Local().Format(time.RFC3339))
	}
	if v.Delivered != nil {
		row("delivered", v.Delivered.Local().Format(time.RFC3339))
	}
	if v.Job != "" {
		row("job", v.Job)
	}
	if v.LastPhase != 0 {
		row("escalation", fmt.Sprintf("phase %d at the last reminder", v.LastPhase))
	}
	for _, r := range v.Resets {
		row("reset", r.Local().Format(time.RFC3339))
	}
	if v.LastError != "" {
		row("last error", v.LastError)
	}
	for _, t := range v.Transitions {
		row("transition", fmt.Sprintf("%s  %s  (%s)", t.At.Local().Format(time.RFC3339), t.Status, t.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", v.Text)
	return err
}

// newChange builds close, link, ignore and remind-now: one update each, exit 1 when the intent
// does not exist or has ended.
func newChange(use, short, update string, flags func(*cobra.Command) func(cmd *cobra.Command, args []string) (id string, arg any, err error)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short}
	resolve := flags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, arg, err := resolve(cmd, args)
		if err != nil {
			return err
		}
		_, c, err := connect(cmd)
		if err != nil {
			return err
		}
		defer c.Close()
		var st workflows.IntentState
		if chat, ok := strings.CutPrefix(id, "chat:"); ok {
			id, st, err = intent.CloseOldestPending(cmd.Context(), c, chat, arg.(workflows.CloseRequest))
		} else {
			st, err = intent.Update(cmd.Context(), c, id, update, arg)
		}
		if err != nil {
			return err
		}
		// Read your writes: the next `starter pending` shows the change.
		intent.AwaitListed(cmd.Context(), c, id, st.Status, 5*time.Second)
		if asJSON {
			return printJSON(cmd.OutOrStdout(), map[string]any{"id": id, "status": st.Status, "reminders": st.Reminders})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s\n", update, id, st.Status)
		return nil
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func idArg(cmd *cobra.Command, args []string) (string, error) {
	if len(args) != 1 {
		return "", usage(cmd, fmt.Errorf("%s needs one intent ID (intent/<chat>/<msg>)", cmd.Name()))
	}
	return args[0], nil
}

func newClose() *cobra.Command {
	var chat, replyTo, reason string
	return newChange("close [ID] | close --chat C [--reply-to M]",
		"close an intent (the agent replied); by chat alone, the chat's oldest pending intent", workflows.UpdateClose,
		func(cmd *cobra.Command) func(*cobra.Command, []string) (string, any, error) {
			cmd.Flags().StringVar(&chat, "chat", "", "chat ID (with --reply-to, or alone for its oldest pending intent)")
			cmd.Flags().StringVar(&replyTo, "reply-to", "", "message ID the reply answers")
			cmd.Flags().StringVar(&reason, "reason", "", "why (default: replied)")
			return func(cmd *cobra.Command, args []string) (string, any, error) {
				req := workflows.CloseRequest{Reason: reason}
				switch {
				case len(args) == 1 && chat == "":
					return args[0], req, nil
				case len(args) == 0 && chat != "" && replyTo != "":
					return workflows.IntentID(chat, replyTo), req, nil
				case len(args) == 0 && chat != "":
					return "chat:" + chat, req, nil
				default:
					return "", nil, usage(cmd, errors.New("close takes an intent ID, or --chat with an optional --reply-to"))
				}
			}
		})
}

func newLink() *cobra.Command {
	var job string
	return newChange("link ID --job J", "tie an intent to a job; its reminders stop", workflows.UpdateLink,
		func(cmd *cobra.Command) func(*cobra.Command, []string) (string, any, error) {
			cmd.Flags().StringVar(&job, "job", "", "job ID (required)")
			return func(cmd *cobra.Command, args []string) (string, any, error) {
				if err := requireFlags(cmd, "job"); err != nil {
					return "", nil, err
				}
				id, err := idArg(cmd, args)
				return id, workflows.LinkRequest{Job: job}, err
			}
		})
}

func newIgnore() *cobra.Command {
	var reason string
	return newChange("ignore ID", "give up on an intent (reason manual unless given)", workflows.UpdateIgnore,
		func(cmd *cobra.Command) func(*cobra.Command, []string) (string, any, error) {
			cmd.Flags().StringVar(&reason, "reason", "", "why (default: manual)")
			return func(cmd *cobra.Command, args []string) (string, any, error) {
				id, err := idArg(cmd, args)
				return id, workflows.IgnoreRequest{Reason: reason}, err
			}
		})
}

func newRemindNow() *cobra.Command {
	return newChange("remind-now ID", "remind the session of a pending intent now", workflows.UpdateRemindNow,
		func(cmd *cobra.Command) func(*cobra.Command, []string) (string, any, error) {
			return func(cmd *cobra.Command, args []string) (string, any, error) {
				id, err := idArg(cmd, args)
				return id, nil, err
			}
		})
}
