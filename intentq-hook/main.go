// Command intentq-hook answers the agents' hooks as `starter hook` does, with the same command
// line (intentq-hook hook <event> [--cli ...] [--session ...]), in a binary without the Temporal
// SDK: it starts in a few milliseconds instead of the starter's ~15, at every prompt, tool call
// and turn boundary of every agent (issue 38). It takes, commits, reports and reads through the
// worker's hook desk; a call the desk does not answer goes to `starter hook backend`, started
// beside it at the first such call. What it does not answer itself it hands whole, input and
// all, to `starter hook`, which takes its place (exec) with what is left of the hook's time: the
// permission hook, a config it cannot read, no desk here (no worker on this machine), an agent
// its CLI session's binding names (the starter checks the pane), any other command line. setup
// installs it when it sits beside the starter (`make build` puts both in bin/).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/doors/hooks"
)

// pingTimeout bounds the look for a desk on the socket.
const pingTimeout = time.Second

func main() {
	began := time.Now()
	private.Umask()
	os.Exit(run(context.Background(), began, os.Args[1:], os.Stdin, os.Stdout))
}

// run answers one hook and returns the exit code (0 unless the starter it handed over to says
// otherwise: a hook never wedges its agent).
func run(ctx context.Context, began time.Time, args []string, stdin io.Reader, stdout io.Writer) int {
	logger := hooks.Logger()
	starter, err := starterPath()
	if err != nil {
		logger.Warn("intentq-hook: no starter beside it; allowing", zap.Error(err))
		_, _ = io.Copy(io.Discard, stdin)
		return 0
	}
	h := handOver{starter: starter, args: args, began: began, stdout: stdout, logger: logger}
	fs, call, ok := parse(args)
	if !ok {
		return h.now()
	}
	cfg, err := config.Load(fs)
	if err != nil || call.Event == hooks.EventPermissionRequest {
		// The starter reports an unusable config (doctor, one push per cause); the permission
		// hook waits for the person through Temporal.
		return h.now()
	}
	if err := hooks.ClearError(cfg.DataDir); err != nil {
		logger.Warn("hook", zap.Error(err))
	}
	data, err := hooks.ReadRaw(stdin)
	if err != nil {
		logger.Warn("hook: input unreadable; printing nothing (the CLI goes on as without intentq)", zap.Error(err))
		return 0
	}
	c, err := hooks.Resolve(ctx, cfg, call, data, logger)
	if err != nil || c.NeedsPaneCheck(call) {
		// The pane check reads tmux as the worker's activities do: the starter makes it.
		return h.with(data)
	}
	tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
	if err != nil {
		return h.with(data)
	}
	desk := desksocket.Client{Path: desksocket.SocketPath(cfg.DataDir), Token: tok}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = desk.Ping(pctx)
	cancel()
	if err != nil {
		return h.with(data) // no worker here: the starter goes to Temporal
	}
	s := hooks.CallSettings(cfg, call, c, logger)
	child := startChild(starter, configArgs(fs))
	dial := func(context.Context) (hooks.Backend, func(), error) {
		b, closeFn := hooks.Lazy(child)
		return hooks.ThroughDesk(cfg.DataDir, tok, b), closeFn, nil
	}
	if err := hooks.Run(ctx, call.Event, bytes.NewReader(c.Input), stdout, s, dial, cfg.Hooks.Timeout); err != nil {
		logger.Warn("hook", zap.Error(err))
	}
	return 0
}

// parse reads a hook's command line: `hook <event>` with --cli, --session and the config's
// flags; ok is false for anything else (the starter answers it).
func parse(args []string) (fs *pflag.FlagSet, call hooks.Call, ok bool) {
	fs = pflag.NewFlagSet("intentq-hook", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterFlags(fs)
	cli := fs.String("cli", "claude", "")
	session := fs.String("session", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, hooks.Call{}, false
	}
	a := fs.Args()
	if len(a) != 2 || a[0] != "hook" || !slices.Contains(hooks.Events(), a[1]) {
		return nil, hooks.Call{}, false
	}
	return fs, hooks.NewCall(a[1], *cli, *session), true
}

// configArgs are the config's flags set on fs, for the starter.
func configArgs(fs *pflag.FlagSet) []string {
	names := pflag.NewFlagSet("config", pflag.ContinueOnError)
	config.RegisterFlags(names)
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if names.Lookup(f.Name) != nil {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// startChild starts `starter hook backend`: dialed lazily (hooks.Lazy), at the first call the
// desk does not answer.
func startChild(starter string, cfgArgs []string) hooks.Dial {
	return func(context.Context) (hooks.Backend, func(), error) {
		child, err := desksocket.StartChild(func() *exec.Cmd {
			cmd := exec.Command(starter, append([]string{"hook", "backend"}, cfgArgs...)...)
			cmd.Stderr = os.Stderr
			return cmd
		})
		if err != nil {
			return nil, nil, err
		}
		return child.Client(), func() { _ = child.Close() }, nil
	}
}

// starterPath is the starter in intentq-hook's own folder.
func starterPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("intentq-hook: its own path: %w", err)
	}
	path := filepath.Join(filepath.Dir(self), hooks.StarterBinary)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("intentq-hook: %w", err)
	}
	return path, nil
}

// handOver runs the starter's `hook` with the same command line, in intentq-hook's place.
type handOver struct {
	starter string
	args    []string
	// began is when the hook began: the starter has what is left of its time.
	began  time.Time
	stdout io.Writer
	logger *zap.Logger
}

// now becomes the starter: the same process, so the CLI that waits for the hook (and may end
// it) waits for the starter.
func (h handOver) now() int {
	err := syscall.Exec(h.starter, append([]string{h.starter}, h.args...), h.env())
	h.logger.Warn("intentq-hook: could not hand the hook to the starter; allowing", zap.Error(err))
	return 0
}

// with becomes the starter after the input was read: the input is its standard input again (a
// file in memory on descriptor 0). Where that cannot be made, the starter runs as a child on
// the input, and intentq-hook exits as it does.
func (h handOver) with(data []byte) int {
	err := stdinFrom(data)
	if err == nil {
		return h.now()
	}
	h.logger.Warn("intentq-hook: the starter runs beside it", zap.Error(err))
	cmd := exec.Command(h.starter, h.args...)
	cmd.Env = h.env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(data), h.stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	case err != nil:
		h.logger.Warn("intentq-hook: the starter did not answer the hook; allowing", zap.Error(err))
	}
	return 0
}

// env is the starter's environment: this one, and when the hook began.
func (h handOver) env() []string {
	return append(os.Environ(), config.EnvHookStarted+"="+strconv.FormatInt(h.began.UnixNano(), 10))
}

// stdinFrom makes data the process's standard input: a file in memory, read from its start, on
// descriptor 0.
func stdinFrom(data []byte) error {
	fd, err := unix.MemfdCreate("intentq-hook-input", 0)
	if err != nil {
		return fmt.Errorf("input for the starter: %w", err)
	}
	f := os.NewFile(uintptr(fd), "intentq-hook-input")
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("input for the starter: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("input for the starter: %w", err)
	}
	if err := unix.Dup3(fd, 0, 0); err != nil {
		return fmt.Errorf("input for the starter: %w", err)
	}
	return nil
}
