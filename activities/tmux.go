package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/receipt"
)

// Error types of the tmux activities, as seen by workflows in ApplicationError.Type().
const (
	// ErrTypeTmuxTargetMissing: the tmux server is not running, or the session, window or pane
	// named by the target does not exist (or its program has exited). Not retryable.
	ErrTypeTmuxTargetMissing = "TmuxTargetMissing"
	// ErrTypeEmptyText: Inject was asked to type nothing. Not retryable.
	ErrTypeEmptyText = "EmptyText"
	// ErrTypeInvalidText: the text is not valid UTF-8, which cannot be typed faithfully (tmux
	// silently drops invalid UTF-8). Not retryable.
	ErrTypeInvalidText = "InvalidText"
)

const (
	defaultTmuxBin        = "tmux"
	defaultTmuxEnterDelay = 300 * time.Millisecond
	// tmuxChunkBytes bounds one piece of a line's typing (one buffer pasted); a piece is typed
	// and recorded before the next, so a retry resumes after it.
	tmuxChunkBytes = 1000
	// tmuxPaneFormat is what resolve asks tmux about the target pane. The socket's path and the
	// program's name may hold spaces (and tmux shows a tab as "_" without a UTF-8 locale): the
	// path comes with its length, the name last.
	tmuxPaneFormat = "#{pane_id} #{pane_dead} #{pane_in_mode} #{n:socket_path} #{socket_path}#{pane_current_command}"
)

// Tmux types into tmux panes. Zero value works: Bin "tmux", default server, EnterDelay 300ms.
//
// A target is an ordinary tmux target ("session", "session:window.pane", "%3", ...), matched
// exactly (ExactTarget): tmux's own rules would also match a session "claude-old" for the target
// "claude" when no session "claude" exists, and intentq would type into the wrong agent.
type Tmux struct {
	Bin        string        // tmux binary, default "tmux"
	Socket     string        // optional: -L socket name (tests use a private server)
	EnterDelay time.Duration // pause between the text and Enter, default 300ms
	// TypedDir, when set, keeps a marker per delivery (InjectRequest.Key) once its Enter was
	// pressed: a retry of a delivery that reached the pane (the worker died before it could
	// report it) types nothing again.
	TypedDir string
	// ReceiptsDir, when set, records where each block that begins with intentq's header was
	// typed (receipt.Record): the session and the pane, so that an agent the person started by
	// hand is bound to its session by its hook's receipt of the block (issue 37).
	ReceiptsDir string
	// Sessions resolves a request's session name to the pane, keys and programs the worker's
	// config names (the worker always sets it); nil: requests are taken as they are (tests and
	// tools that type where they are told).
	Sessions *Directory
}

// InjectRequest is the input of Tmux.Inject: the text to type into the target pane, followed
// by Enter.
type InjectRequest struct {
	// Session names the session whose pane is typed into; the pane is the one the worker's
	// config names for it. Target is only read from requests of older builds (and must then
	// be a configured pane).
	Session string `json:"session,omitempty"`
	Target  string `json:"target,omitempty"`
	// Relaunch types the session's launch line (from the worker's config, not Text) into the
	// shell its pane shows after a key-style reset; only into a shell.
	Relaunch bool   `json:"relaunch,omitempty"`
	Text     string `json:"text"`
	// NewlineKey, when set, is the key (e.g. "C-j" or "S-Enter") typed for each newline in a
	// multi-line Text; empty means multi-line text goes in as one bracketed paste, so the CLI
	// receives it as one message.
	NewlineKey string `json:"newline_key,omitempty"`
	// CheckLines, when above 0, asks for that many lines from the bottom of the pane, read
	// CheckDelay after Enter, so the caller can see whether the text left the input line.
	CheckLines int           `json:"check_lines,omitempty"`
	CheckDelay time.Duration `json:"check_delay,omitempty"`
	// Key names this typing (a delivery and its try): typed once, whatever the retries.
	Key string `json:"key,omitempty"`
}

// InjectResult is what Inject saw after Enter (when asked to look).
type InjectResult struct {
	Bottom string `json:"bottom,omitempty"`
}

// paneInfo is what resolve learnt about a target.
type paneInfo struct {
	id      string // "%N", stable for the pane's lifetime
	dead    bool   // the pane's program has exited (remain-on-exit keeps the pane)
	inMode  bool   // copy mode or another mode: keys would go to the mode, not the program
	command string // the foreground program (#{pane_current_command})
	socket  string // the tmux server's socket (#{socket_path})
}

// Inject types req.Text into the pane req.Target literally, waits EnterDelay and presses Enter.
// No character of the text ever acts as a key: control characters are shown visibly first
// (VisibleControls), so an ESC, CR or C-c in a message cannot interrupt, submit or open a menu.
//
// The text goes to tmux on standard input (load-buffer -, then paste-buffer), never on a
// command line nor through a shell, so no other user reads it in a process's argv, and `;`,
// key names such as C-c, $(...), quotes, a leading '-' and newlines all arrive as typed
// (a newline inside the text arrives as a line feed; it does not press Enter). The target is
// resolved once to its pane id, so the text and the Enter reach the same pane even if the user
// switches windows meanwhile. A pane in copy mode is taken out of it first; otherwise tmux would
// feed the text to copy mode as commands and the program would never see it.
//
// A missing server, session, window or pane (or a pane whose program has exited) gives a
// non-retryable ErrTypeTmuxTargetMissing error naming the target. Other tmux failures are
// retryable. A retry after a failure between the text and the Enter types the text again.
func (t *Tmux) Inject(ctx context.Context, req InjectRequest) (InjectResult, error) {
	defer keepAlive(ctx)()
	ep, err := t.endpoint(req.Session, req.Target)
	if err != nil {
		return InjectResult{}, err
	}
	req.Target = ep.Target
	front := ep.ProcessNames
	if req.Relaunch {
		front = ep.Shells
		if t.Sessions != nil {
			if ep.LaunchLine == "" {
				return InjectResult{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("session %q has no launch line in this worker's config: no relaunch", req.Session), ErrTypeUnknownSession, nil)
			}
			req.Text = ep.LaunchLine
		}
	}
	if req.Text == "" {
		return InjectResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tmux inject to %q: text is empty", req.Target), ErrTypeEmptyText, nil)
	}
	if !utf8.ValidString(req.Text) {
		return InjectResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tmux inject to %q: text is not valid UTF-8", req.Target),
			ErrTypeInvalidText, nil)
	}
	req.Text = VisibleControls(req.Text)
	marker := t.marker(req.Key)
	if marker != "" {
		if _, err := os.Stat(marker); err == nil {
			return InjectResult{}, nil // typed and entered by an earlier attempt
		}
	}
	pane, err := t.resolve(ctx, req.Target)
	if err != nil {
		return InjectResult{}, err
	}
	if err := foreground(pane, req.Session, req.Target, front); err != nil {
		return InjectResult{}, err
	}
	if pane.inMode {
		if _, err := t.run(ctx, req.Target, "copy-mode", "-q", "-t", pane.id); err != nil {
			return InjectResult{}, err
		}
	}
	// Pieces of the text an earlier attempt typed (a worker that died mid-typing): typing goes
	// on after them, so that nothing reaches the pane twice.
	done, loaded := typedPieces(marker)
	if marker != "" && done == 0 && !loaded && activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
		// An earlier attempt may have typed part of a line without its Enter (the worker died
		// in between): clear it from the input line rather than type it twice into one line,
		// and only when the line the cursor is on shows its beginning (never a person's draft).
		if err := t.clearEarlierAttempt(ctx, req, pane.id); err != nil {
			return InjectResult{}, err
		}
	}
	// Once begun, the typing and its Enter are not cut short by the worker's shutdown (SIGTERM
	// cancels activities): half a typing is worse than a whole one. The activity's deadline
	// still holds.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(typingTimeout)
	}
	tctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if err := t.typeText(tctx, req, pane.id, marker, done, loaded); err != nil {
		return InjectResult{}, err
	}
	if err := receipt.Record(t.ReceiptsDir, req.Text, receipt.Typed{Session: req.Session, Pane: pane.id, Socket: pane.socket, At: time.Now()}); err != nil && activity.IsActivity(ctx) {
		// The block still goes in: only the binding of a hand-started agent waits for the next.
		activity.GetLogger(ctx).Warn("typed block not recorded", "session", req.Session, "error", err)
	}
	delay := t.EnterDelay
	if delay <= 0 {
		delay = defaultTmuxEnterDelay
	}
	if err := sleepCtx(tctx, delay); err != nil {
		return InjectResult{}, fmt.Errorf("tmux send-keys to %s: waiting to press Enter: %w", req.Target, err)
	}
	if _, err = t.run(tctx, req.Target, "send-keys", "-t", pane.id, "Enter"); err != nil {
		return InjectResult{}, err
	}
	if marker != "" {
		if err := os.MkdirAll(filepath.Dir(marker), 0o700); err == nil {
			err = os.WriteFile(marker, nil, 0o600)
		}
		if err != nil {
			return InjectResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tmux inject to %q: typed, but the marker was not written: %v", req.Target, err), ErrTypeMarker, err)
		}
		_ = os.Remove(marker + typingSuffix)
	}
	if req.CheckLines <= 0 {
		return InjectResult{}, nil
	}
	if err := sleepCtx(ctx, req.CheckDelay); err != nil {
		return InjectResult{}, fmt.Errorf("tmux capture-pane of %s: %w", req.Target, err)
	}
	bottom, err := t.capture(ctx, req.Target, pane.id, req.CheckLines)
	return InjectResult{Bottom: bottom}, err
}

// clearEarlierAttempt presses C-u when the cursor's line shows the beginning of req's text.
func (t *Tmux) clearEarlierAttempt(ctx context.Context, req InjectRequest, paneID string) error {
	line, err := t.cursorLine(ctx, req.Target, paneID)
	if err != nil {
		return err
	}
	head := []rune(strings.SplitN(req.Text, "\n", 2)[0])
	if len(head) > 16 {
		head = head[:16]
	}
	if len(head) == 0 || !strings.Contains(line, string(head)) {
		return nil
	}
	_, err = t.run(ctx, req.Target, "send-keys", "-t", paneID, "C-u")
	return err
}

// cursorLine is the text of the pane's line the cursor is on.
func (t *Tmux) cursorLine(ctx context.Context, target, paneID string) (string, error) {
	y, err := t.run(ctx, target, "display-message", "-p", "-t", paneID, "#{cursor_y}")
	if err != nil {
		return "", err
	}
	y = strings.TrimSpace(y)
	return t.run(ctx, target, "capture-pane", "-p", "-J", "-t", paneID, "-S", y, "-E", y)
}

// ErrTypeMarker: the text was typed and entered but its marker could not be written; not
// retried, since a retry would type it again.
const ErrTypeMarker = "TypedMarker"

// marker is the file that says a typing with key was entered; "" without a key or TypedDir.
func (t *Tmux) marker(key string) string { return keyFile(t.TypedDir, key) }

// keyFile is the file in dir that stands for key ("" when either is empty).
func keyFile(dir, key string) string {
	if key == "" || dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}

// PruneTyped removes typing markers older than age: a delivery is retried for minutes, not days.
func (t *Tmux) PruneTyped(age time.Duration) error {
	if err := pruneOlder(t.TypedDir, age); err != nil {
		return fmt.Errorf("prune typing markers: %w", err)
	}
	if err := pruneOlder(t.ReceiptsDir, age); err != nil {
		return fmt.Errorf("prune typed blocks: %w", err)
	}
	return nil
}

// pruneOlder removes the files in dir (none when dir is "" or missing) older than age.
func pruneOlder(dir string, age time.Duration) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// typeText types a request's text into the pane without its Enter: a line as pasted keys
// (paste-buffer without brackets); multi-line text either as one bracketed paste (paste-buffer
// -p, newlines become carriage returns inside the paste) or line by line with the CLI's newline
// key. It goes in pieces (a paste, a chunk of literal text, a newline key), each recorded beside
// marker once it is in; the first done pieces went in before (an attempt that died), which had
// loaded the next one into its buffer when loaded.
//
// A keyed typing pastes each piece from a buffer named for the typing and the piece, loaded and
// recorded as loaded before the paste, which deletes the buffer in the same tmux command: a
// worker killed while tmux pastes (the tmux client finishes the paste without it) leaves a
// record that says "loaded" and no buffer, so the next attempt knows the piece went in and never
// pastes it twice (a pasted block is not always on the screen to be seen: Claude Code shows
// "[Pasted text]", an agent without echo nothing).
func (t *Tmux) typeText(ctx context.Context, req InjectRequest, paneID, marker string, done int, loaded bool) error {
	for i, p := range typingPieces(req) {
		if i < done {
			continue
		}
		var err error
		switch {
		case p.key != "":
			_, err = t.run(ctx, req.Target, "send-keys", "-t", paneID, p.key)
		default:
			err = t.paste(ctx, req, paneID, marker, i, p, i == done && loaded)
		}
		if err != nil {
			return err
		}
		noteTypedPieces(marker, i+1, false)
	}
	return nil
}

// paste types piece i of a typing from a tmux buffer. The text reaches tmux on standard input,
// never on a command line (issue 33: any local user reads every process's argv): loaded into a
// buffer of its own, then pasted, bracketed for a multi-line paste, as typed keys otherwise (-r:
// a piece of one line has no line feed to replace). With a marker, the buffer is named for the
// typing and the piece, and the load is recorded before the paste (see typeText); resume: an
// attempt that died had loaded it.
func (t *Tmux) paste(ctx context.Context, req InjectRequest, paneID, marker string, i int, p piece, resume bool) error {
	mode := "-r"
	if p.paste {
		mode = "-p"
	}
	buffer := fmt.Sprintf("intentq-%d-%d", os.Getpid(), bufferSeq.Add(1))
	if marker != "" {
		buffer = fmt.Sprintf("intentq-%s-%d", filepath.Base(marker), i)
		if resume {
			// An attempt that died loaded this piece: its buffer is still there unless tmux
			// pasted it.
			there, err := t.hasBuffer(ctx, req.Target, buffer)
			if err != nil {
				return err
			}
			if !there {
				return nil
			}
			_, err = t.run(ctx, req.Target, "paste-buffer", mode, "-d", "-b", buffer, "-t", paneID)
			return err
		}
	}
	if _, err := t.runInput(ctx, req.Target, p.text, "load-buffer", "-b", buffer, "-"); err != nil {
		return err
	}
	noteTypedPieces(marker, i, true)
	_, err := t.run(ctx, req.Target, "paste-buffer", mode, "-d", "-b", buffer, "-t", paneID)
	return err
}

// hasBuffer reports whether the tmux server of target holds a paste buffer named name.
func (t *Tmux) hasBuffer(ctx context.Context, target, name string) (bool, error) {
	out, err := t.run(ctx, target, "list-buffers", "-F", "#{buffer_name}")
	if err != nil {
		return false, err
	}
	return slices.Contains(strings.Split(out, "\n"), name), nil
}

// piece is one step of a typing: a paste, literal text or a key.
type piece struct {
	text  string
	key   string
	paste bool
}

// typingPieces splits a typing into the steps typeText takes, the same for every attempt.
func typingPieces(req InjectRequest) []piece {
	if strings.Contains(req.Text, "\n") && req.NewlineKey == "" {
		return []piece{{text: req.Text, paste: true}}
	}
	var out []piece
	for i, line := range strings.Split(req.Text, "\n") {
		if i > 0 {
			out = append(out, piece{key: req.NewlineKey})
		}
		for _, chunk := range splitUTF8(line, tmuxChunkBytes) {
			out = append(out, piece{text: chunk})
		}
	}
	return out
}

// typingSuffix names the file beside a typing's marker that counts the pieces typed so far.
const typingSuffix = ".typing"

// typingTimeout bounds one typing and its Enter outside an activity (which has its deadline).
const typingTimeout = 30 * time.Second

// typedPieces is how many pieces of a typing an earlier attempt typed (0: none, or no marker),
// and whether it had loaded the next one into its buffer to paste (typeText).
func typedPieces(marker string) (done int, loaded bool) {
	if marker == "" {
		return 0, false
	}
	data, err := os.ReadFile(marker + typingSuffix)
	if err != nil {
		return 0, false
	}
	count, loaded := strings.CutSuffix(strings.TrimSpace(string(data)), "+")
	n, _ := strconv.Atoi(count)
	return n, loaded
}

// noteTypedPieces records that n pieces of a typing are typed, and whether the next is loaded
// into its buffer, atomically (a kill mid-write never leaves a count of 0); best effort (without
// it a retry types those pieces again).
func noteTypedPieces(marker string, n int, loaded bool) {
	if marker == "" {
		return
	}
	note := strconv.Itoa(n)
	if loaded {
		note += "+"
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err == nil {
		_ = private.WriteFileAtomic(marker+typingSuffix, []byte(note))
	}
}

// bufferSeq numbers paste buffers so concurrent activities never share one.
var bufferSeq atomic.Int64

// CaptureRequest asks for the bottom of a pane's visible content.
type CaptureRequest struct {
	// Session names the session whose pane is read (Target: requests of older builds).
	Session string `json:"session,omitempty"`
	Target  string `json:"target,omitempty"`
	// Lines is how many lines from the bottom to return (trailing blank lines skipped); 0: all.
	Lines int `json:"lines"`
}

// Capture returns the last req.Lines non-blank-trailing lines of the pane's visible content
// (capture-pane -p -J). A missing pane is the same non-retryable error as for Inject.
//
// A pane whose foreground program is not the session's CLI gives a non-retryable
// ErrTypeNotAgent error: what the session reads there says nothing about its agent, and it must
// not type there.
func (t *Tmux) Capture(ctx context.Context, req CaptureRequest) (string, error) {
	defer keepAlive(ctx)()
	ep, err := t.endpoint(req.Session, req.Target)
	if err != nil {
		return "", err
	}
	pane, err := t.resolve(ctx, ep.Target)
	if err != nil {
		return "", err
	}
	if err := foreground(pane, req.Session, ep.Target, ep.ProcessNames); err != nil {
		return "", err
	}
	return t.capture(ctx, ep.Target, pane.id, req.Lines)
}

func (t *Tmux) capture(ctx context.Context, target, paneID string, n int) (string, error) {
	out, err := t.run(ctx, target, "capture-pane", "-p", "-J", "-t", paneID)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(out, " \n"), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), nil
}

// TargetExists returns nil when target names a live pane on the tmux server, a non-retryable
// ErrTypeTmuxTargetMissing error naming the target when the server, session, window or pane is
// missing or the pane's program has exited, and a retryable error when tmux itself fails.
func (t *Tmux) TargetExists(ctx context.Context, target string) error {
	_, err := t.resolve(ctx, target)
	return err
}

// Pane is the pane id and server socket of target's pane (what a hook's TMUX_PANE and TMUX say
// where it runs), or the error TargetExists gives.
func (t *Tmux) Pane(ctx context.Context, target string) (id, socket string, err error) {
	p, err := t.resolve(ctx, target)
	return p.id, p.socket, err
}

// Foreground returns the name of the program in front in target's pane (what tmux shows as
// #{pane_current_command}), or the error TargetExists gives.
func (t *Tmux) Foreground(ctx context.Context, target string) (string, error) {
	p, err := t.resolve(ctx, target)
	return p.command, err
}

// resolve checks that target is a live pane and returns its id.
//
// `display-message -p -t` cannot do the check: in tmux 3.3a it exits 0 for a missing target,
// printing nothing or the values of some other pane. send-keys with an empty literal string
// fails exactly when a real send would, without typing anything; display-message runs in the
// same command list only when it succeeded, so both see the same target.
func (t *Tmux) resolve(ctx context.Context, target string) (paneInfo, error) {
	if target == "" || strings.HasSuffix(target, ";") || strings.ContainsFunc(target, isControl) {
		return paneInfo{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tmux target %q is not a valid target", target), ErrTypeTmuxTargetMissing, nil)
	}
	exact := ExactTarget(target)
	out, err := t.run(ctx, target,
		"send-keys", "-t", exact, "-l", "--", "", ";",
		"display-message", "-p", "-t", exact, tmuxPaneFormat)
	if err != nil {
		return paneInfo{}, err
	}
	f := strings.SplitN(strings.TrimRight(out, "\n"), " ", 5)
	n, nerr := 0, error(nil)
	if len(f) == 5 {
		n, nerr = strconv.Atoi(f[3])
	}
	if len(f) < 5 || !strings.HasPrefix(f[0], "%") || nerr != nil || n < 0 || n > utf8.RuneCountInString(f[4]) {
		return paneInfo{}, fmt.Errorf("tmux display-message for %s: unexpected output %q", target, out)
	}
	rest := []rune(f[4])
	p := paneInfo{id: f[0], dead: f[1] == "1", inMode: f[2] == "1", socket: string(rest[:n]), command: string(rest[n:])}
	if p.dead {
		return paneInfo{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tmux target %q: pane %s is dead (its program has exited)", target, p.id),
			ErrTypeTmuxTargetMissing, nil)
	}
	return p, nil
}

// runInput is run with stdin.
func (t *Tmux) runInput(ctx context.Context, target, stdin string, args ...string) (string, error) {
	return t.exec(ctx, target, strings.NewReader(stdin), args...)
}

// run runs tmux with args and returns its standard output. A failure that means the target is
// missing becomes a non-retryable ErrTypeTmuxTargetMissing error naming target; any other
// failure is a plain (retryable) error with tmux's standard error.
func (t *Tmux) run(ctx context.Context, target string, args ...string) (string, error) {
	return t.exec(ctx, target, nil, args...)
}

func (t *Tmux) exec(ctx context.Context, target string, stdin io.Reader, args ...string) (string, error) {
	bin := t.Bin
	if bin == "" {
		bin = defaultTmuxBin
	}
	argv := make([]string, 0, len(args)+2)
	if t.Socket != "" {
		argv = append(argv, "-L", t.Socket)
	}
	argv = append(argv, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdin = stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("tmux %s to %s: %w", args[0], target, ctxErr)
	}
	msg := strings.TrimSpace(stderr.String())
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && tmuxTargetMissing(msg) {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tmux target %q not found: %s", target, msg), ErrTypeTmuxTargetMissing, err)
	}
	return "", fmt.Errorf("tmux %s to %s: %w: %s", args[0], target, err, msg)
}

// tmuxTargetMissing reports whether tmux's error output says the server or the target is
// missing (tmux 3.3a wording).
func tmuxTargetMissing(stderr string) bool {
	for _, s := range []string{
		"no server running on", // no socket, or a socket left behind by a dead server
		"error connecting to",  // socket missing, refusing or not ours
		"can't find session",   // also an ambiguous session prefix
		"can't find window",    // also an ambiguous window name
		"can't find pane",      // including a pane id that no longer exists
		"no current target",    // a target that resolves to nothing
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// splitUTF8 cuts s into pieces of at most max bytes without splitting a rune. s must be valid
// UTF-8 and max at least utf8.UTFMax.
func splitUTF8(s string, max int) []string {
	var out []string
	for len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

// ExactTarget turns a tmux target into one that tmux matches exactly: session and window names
// get tmux's "=" prefix ("secretary:0" -> "=secretary:0", "work:editor.1" -> "=work:=editor.1"),
// so a missing "secretary" is missing, never the neighbour "secretary-old". A session alone
// ("secretary") names its active pane ("=secretary:"). Pane, window and session ids (%3, @2, $1),
// window indexes and targets already exact are left as they are.
func ExactTarget(target string) string {
	if target == "" || strings.ContainsAny(target[:1], "%@$=") {
		return target
	}
	session, window, hasWindow := strings.Cut(target, ":")
	if session != "" {
		session = "=" + session
	}
	if !hasWindow {
		return session + ":"
	}
	name, pane, hasPane := window, "", false
	if i := strings.LastIndexByte(window, '.'); i >= 0 {
		name, pane, hasPane = window[:i], window[i+1:], true
	}
	if name != "" && !strings.ContainsAny(name[:1], "@={}!+-^$") && strings.Trim(name, "0123456789") != "" {
		name = "=" + name
	}
	if hasPane {
		name += "." + pane
	}
	return session + ":" + name
}

// VisibleControls makes text safe to type: no character of it can act as a key. Line breaks
// (LF, CRLF, CR) become LF, which Inject types as a paste or the CLI's newline key; a tab
// becomes a space; every other C0 control and DEL is shown as its Unicode control picture
// (ESC as U+241B ␛, NUL as U+2400 ␀), and C1 controls as U+FFFD.
func VisibleControls(text string) string {
	if !strings.ContainsFunc(text, func(r rune) bool { return r != '\n' && isControlChar(r) }) {
		return text
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\r':
			return '\n'
		case r == '\t':
			return ' '
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		case r >= 0x80 && r <= 0x9f:
			return utf8.RuneError
		}
		return r
	}, text)
}

// isControlChar reports C0 and C1 control characters and DEL.
func isControlChar(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// isControl reports ASCII control characters, which never belong in a tmux target.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// KeysRequest asks for tmux key names (Escape, C-c, Enter...) to be pressed in a pane, one at a
// time with Delay between them. These are keys, not text: only intentq's own escalation steps
// are sent this way, never message text.
type KeysRequest struct {
	// Session names the session whose pane gets the keys; each key must be one the worker's
	// config names for it (Target: requests of older builds).
	Session string        `json:"session,omitempty"`
	Target  string        `json:"target,omitempty"`
	Keys    []string      `json:"keys"`
	Delay   time.Duration `json:"delay,omitempty"`
}

// SendKeys presses req.Keys in the pane, in order.
func (t *Tmux) SendKeys(ctx context.Context, req KeysRequest) error {
	defer keepAlive(ctx)()
	ep, err := t.endpoint(req.Session, req.Target)
	if err != nil {
		return err
	}
	req.Target = ep.Target
	if t.Sessions != nil {
		for _, k := range req.Keys {
			if !slices.Contains(ep.Keys, k) {
				return temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("key %q is not one this worker's config names for session %q: no keys pressed", k, req.Session), ErrTypeUnknownSession, nil)
			}
		}
	}
	pane, err := t.resolve(ctx, req.Target)
	if err != nil {
		return err
	}
	if err := foreground(pane, req.Session, req.Target, ep.ProcessNames); err != nil {
		return err
	}
	for i, key := range req.Keys {
		if i > 0 && req.Delay > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("tmux send-keys to %s: %w", req.Target, ctx.Err())
			case <-time.After(req.Delay):
			}
		}
		if _, err := t.run(ctx, req.Target, "send-keys", "-t", pane.id, key); err != nil {
			return err
		}
	}
	return nil
}

// endpoint is the session a tmux request acts on: by name from the worker's config, or, for a
// request of an older build, the configured session whose pane target names.
func (t *Tmux) endpoint(session, target string) (Endpoint, error) {
	return t.Sessions.resolve(session, Endpoint{Target: target}, func(ep Endpoint) bool { return ep.Target == target })
}

// foreground refuses a pane whose foreground program is not one of want (empty: not checked).
func foreground(p paneInfo, session, target string, want []string) error {
	if len(want) == 0 || slices.Contains(want, p.command) {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("session %s: pane %s (%s) shows %q, not %s: nothing is typed there", session, p.id, target, p.command, strings.Join(want, " or ")),
		ErrTypeNotAgent, nil)
}
