package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/trust"
)

// Private checks what keeps other users and other machines out (docs/security.md): data_dir
// and the access token are private to the person, and the listeners are on loopback (or the
// config says otherwise, which is a warning).
func Private(cfg *config.Config) Report {
	r := Report{checkDataDir(cfg.DataDir), checkToken(trust.TokenPath(cfg.DataDir))}
	return append(r, checkListeners(cfg))
}

func checkDataDir(dir string) Result {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Name: "data_dir", Status: StatusWarn, Detail: dir + " does not exist yet", Hint: "the worker creates it (0700) at its first start"}
	case err != nil:
		return Result{Name: "data_dir", Detail: err.Error()}
	case info.Mode().Perm()&0o077 != 0:
		return Result{Name: "data_dir", Detail: fmt.Sprintf("%s has mode %04o: other users can reach message text, histories and tokens", dir, info.Mode().Perm()),
			Hint: fmt.Sprintf("chmod -R go-rwx %s (the worker also fixes it at start), and rotate the access token", dir)}
	}
	return Result{Name: "data_dir", OK: true, Detail: dir + " is private (" + fmt.Sprintf("%04o", info.Mode().Perm()) + ")"}
}

func checkToken(path string) Result {
	err := trust.CheckPrivate(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Name: "access token", Status: StatusWarn, Detail: path + " does not exist yet", Hint: "the worker creates it at its first start"}
	case errors.Is(err, trust.ErrNotPrivate):
		return Result{Name: "access token", Detail: err.Error(),
			Hint: "rotate it: stop the worker, delete " + path + ", start the worker (and restart starter mcp)"}
	case err != nil:
		return Result{Name: "access token", Detail: err.Error()}
	}
	return Result{Name: "access token", OK: true, Detail: path + " is private (0600); `starter ui` prints the Web UI's login URL"}
}

// checkListeners flags a listener beyond loopback: validation refuses one unless allow_remote
// is set, so here it is a warning that says what is exposed.
func checkListeners(cfg *config.Config) Result {
	var open []string
	if cfg.EmbeddedServer() && !trust.LoopbackIP(cfg.Temporal.Embedded.IP) {
		open = append(open, "the Temporal frontend on "+cfg.TemporalAddress()+" (temporal.embedded.allow_remote)")
	}
	if host, _, err := net.SplitHostPort(cfg.Ingest.Listen); err == nil && !trust.LoopbackIP(host) {
		open = append(open, "the ingest endpoint on "+cfg.Ingest.Listen+" (ingest.allow_remote)")
	}
	if len(open) == 0 {
		return Result{Name: "listeners", OK: true, Detail: "on loopback only; each checks the Host and a token"}
	}
	return Result{Name: "listeners", Status: StatusWarn, Detail: fmt.Sprintf("reachable from other machines: %v", open),
		Hint: "keep them on 127.0.0.1 and use an SSH tunnel, unless a firewall or a container's loopback-only port protects them"}
}

// uiToken is the access token doctor presents to the Web UI ("" when it cannot be read: the
// UI check then fails with 401, which says the same).
func uiToken(cfg *config.Config) string {
	tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
	if err != nil {
		return ""
	}
	return tok
}
