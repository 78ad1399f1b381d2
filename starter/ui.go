package main

import (
	"errors"
	"fmt"
	"net/url"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/internal/base/trust"
)

// newUI prints (and with --open opens) the URL that logs a browser into the Web UI: the UI
// requires the access token, which the URL sets as a cookie (as Jupyter does).
func newUI() *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "print the Web UI's login URL (it holds the access token: do not share it); --open opens it",
		Long: "The embedded Web UI and the codec require the access token (data_dir/access.token). The URL\n" +
			"printed here carries it once: the browser gets a cookie and the token leaves the address bar.\n" +
			"With an external cluster the URL logs the browser into the worker's codec endpoint instead\n" +
			"(for a Web UI on 127.0.0.1 whose codec settings include credentials).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := load(cmd)
			if err != nil {
				return err
			}
			tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
			if err != nil {
				return err
			}
			var login string
			switch {
			case cfg.EmbeddedServer() && cfg.Temporal.Embedded.UIPort != 0:
				login = trust.LoginURL(cfg.UIAddress(), tok)
			case cfg.EmbeddedServer():
				return errors.New("the Web UI is off (temporal.embedded.ui_port: 0)")
			case cfg.EncryptionOn():
				login = "http://" + cfg.Ingest.Listen + "/codec/?" + trust.LoginParam + "=" + url.QueryEscape(tok)
			default:
				return errors.New("with an external cluster intentq serves no Web UI (use the cluster's own) and, with encryption off, no codec")
			}
			fmt.Fprintln(cmd.OutOrStdout(), login)
			if open {
				if err := exec.Command("xdg-open", login).Start(); err != nil {
					return fmt.Errorf("xdg-open: %w (open the URL above yourself)", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the URL with xdg-open")
	return cmd
}
