package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/trust"
)

// newUI prints (and with --open opens) the URL that logs a browser into the Web UI: the UI
// requires the access token, which the URL carries once and the UI trades for a login session
// of its own (embedded.UISessionLifetime, UISessionIdle, UILogoutPath).
func newUI() *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "print the Web UI's login URL (it holds the access token: do not share it); --open opens it",
		Long: "The embedded Web UI and the codec require the access token (data_dir/access.token). The URL\n" +
			"printed here carries it once: the embedded Web UI trades it for a login session of its own (the\n" +
			"cookie is a random session ID, never the token; it ends after 12 h, after an hour unused, or at\n" +
			"/intentq/logout, and a worker restart ends it) and the token leaves the address bar.\n" +
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
				return openLogin(cfg.DataDir, login)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the URL with xdg-open (through a private page: the token is on no command line)")
	return cmd
}

// openLogin opens the login URL in the browser without putting it on a command line (issue 33):
// any local user reads every process's argv. The URL goes into a private page under data_dir
// (0600) that sends the browser on to it, and xdg-open gets only the page's path.
func openLogin(dataDir, login string) error {
	target, err := json.Marshal(login) // a JavaScript string; <, > and & escaped
	if err != nil {
		return fmt.Errorf("login page: %w", err)
	}
	page := filepath.Join(dataDir, "ui", "login.html")
	body := `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>intentq</title>` +
		`<script>location.replace(` + string(target) + `)</script>` +
		`<noscript><a href="` + html.EscapeString(login) + `">Open the intentq Web UI</a></noscript>` + "\n"
	if err := private.WriteFile(page, []byte(body)); err != nil {
		return fmt.Errorf("login page: %w", err)
	}
	if err := exec.Command("xdg-open", page).Start(); err != nil {
		return fmt.Errorf("xdg-open: %w (open the URL above yourself)", err)
	}
	return nil
}
