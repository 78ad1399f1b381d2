package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/internal/inbox"
	"github.com/intentq/intentq/workflows"
)

func newInbox() *cobra.Command {
	cmd := &cobra.Command{Use: "inbox", Short: "agent inboxes: send, read (marks read), list"}
	cmd.AddCommand(newInboxSend(), newInboxRead(), newInboxList())
	return cmd
}

func newInboxSend() *cobra.Command {
	var typ, from, key string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "send AGENT CONTENT",
		Short: "put a message in an agent's inbox (CONTENT - reads stdin); its session is nudged",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			content, err := fromStdin(cmd, "content", a[1], 1<<20)
			if err != nil {
				return err
			}
			cfg, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			m, err := inbox.Send(cmd.Context(), c, cfg.Temporal.TaskQueue, inbox.InputFor(cfg, a[0]),
				workflows.InboxSend{Key: key, From: from, Type: typ, Content: content})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), m)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sent %s\n", m.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&typ, "type", "message", "message type (e.g. task, report_completed, error_report)")
	cmd.Flags().StringVar(&from, "from", "", "sender")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: the same key twice is one message")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the message as JSON")
	return cmd
}

func newInboxRead() *cobra.Command {
	return newInboxView("read AGENT", "print an agent's unread messages, oldest first, and mark them read", inbox.Read)
}

func newInboxList() *cobra.Command {
	return newInboxView("list AGENT", "print all messages kept in an agent's inbox without marking them read", inbox.Messages)
}

// newInboxView builds a command that fetches an agent's messages one way and prints them.
func newInboxView(use, short string, fetch func(context.Context, client.Client, string) ([]workflows.InboxMessage, error)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			msgs, err := fetch(cmd.Context(), c, a[0])
			if err != nil {
				return err
			}
			return writeInbox(cmd, msgs, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func writeInbox(cmd *cobra.Command, msgs []workflows.InboxMessage, asJSON bool) error {
	if asJSON {
		if msgs == nil {
			msgs = []workflows.InboxMessage{}
		}
		return printJSON(cmd.OutOrStdout(), msgs)
	}
	if len(msgs) == 0 {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "no messages")
		return err
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFROM\tTYPE\tTIME\tREAD\tCONTENT")
	for _, m := range msgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", m.ID, m.From, m.Type, m.Timestamp.Local().Format(time.RFC3339), m.Read, m.Content)
	}
	return tw.Flush()
}
