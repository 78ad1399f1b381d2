package desksocket

// The protocol on a child's stdin and stdout: a hook binary without the Temporal SDK
// (intentq-hook) asks the starter (`starter hook backend`, which has the SDK) for what the desk
// did not answer, in the desk's own requests and answers, one JSON line each.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/intentq/intentq/internal/hookapi"
)

// Backend answers every call of the protocol with a Temporal client of its own
// (hooktemporal.Temporal in the starter's `hook backend`).
type Backend interface {
	Reader
	Take(ctx context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error)
	Taken(ctx context.Context, session, key string) error
	Report(ctx context.Context, session string, ev hookapi.AgentEvent) error
	CommitContext(ctx context.Context, session, id, text string) error
}

// streamCallTimeout bounds one call a stream answers: a hook's whole time (hooks.MaxTimeout);
// the hook kills its child sooner when its own deadline comes.
const streamCallTimeout = 10 * time.Second

// ServeStream answers the requests read from in (one JSON line each) on out (one answer line
// each) with b, until in ends. A line that is not a request gets an error answer.
func ServeStream(in io.Reader, out io.Writer, b Backend) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var req request
			var res response
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				res.Error = "request is not the expected JSON: " + jerr.Error()
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), streamCallTimeout)
				res = answerCall(ctx, streamDesk{ctx, b}, b, req)
				cancel()
			}
			data, merr := json.Marshal(res)
			if merr != nil {
				data, _ = json.Marshal(response{Error: "answer not encodable: " + merr.Error()})
			}
			if _, werr := w.Write(append(data, '\n')); werr != nil {
				return fmt.Errorf("hook backend: answer: %w", werr)
			}
			if werr := w.Flush(); werr != nil {
				return fmt.Errorf("hook backend: answer: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("hook backend: request: %w", err)
		}
	}
}

// streamDesk is a Backend as the desk's calls see it: every take, commit and report by
// Temporal, and nothing known of an inbox beforehand (the Reader reads it).
type streamDesk struct {
	ctx context.Context
	b   Backend
}

func (d streamDesk) Take(session string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	return d.b.Take(d.ctx, session, req)
}

func (d streamDesk) Commit(session, key string) error { return d.b.Taken(d.ctx, session, key) }

func (d streamDesk) Report(session string, ev hookapi.AgentEvent) error {
	return d.b.Report(d.ctx, session, ev)
}

func (d streamDesk) Context(session, id, text string) error {
	return d.b.CommitContext(d.ctx, session, id, text)
}

func (d streamDesk) UnreadInbox(string) (hookapi.InboxUnread, bool) {
	return hookapi.InboxUnread{}, false
}

// PassOn has nothing to pass on: every commit went to its session by Temporal at once.
func (d streamDesk) PassOn(context.Context) error { return nil }

// Child is a process that answers the protocol on its stdin and stdout (ServeStream), started
// by StartChild; its Client makes the calls, one at a time. A call that outlives its context
// ends that process (its answer would reach the next call) and the next call starts another:
// a hook's commit never fails because a read before it ran out of time.
type Child struct {
	newCmd func() *exec.Cmd
	// turn is held by the call in flight.
	turn chan struct{}
	// proc is the process that answers; nil after one was ended, until the next call.
	proc *childProc
}

// childProc is one run of the child's command.
type childProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	// exited is closed once the process has exited and been waited for.
	exited chan struct{}
}

// StartChild starts newCmd's command (its stdin and stdout must be unset) to answer the
// protocol; newCmd makes the command again when a process has to be replaced.
func StartChild(newCmd func() *exec.Cmd) (*Child, error) {
	c := &Child{newCmd: newCmd, turn: make(chan struct{}, 1)}
	p, err := c.start()
	if err != nil {
		return nil, err
	}
	c.proc = p
	return c, nil
}

func (c *Child) start() (*childProc, error) {
	cmd := c.newCmd()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("hook backend: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("hook backend: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("hook backend: start %s: %w", cmd.Path, err)
	}
	p := &childProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// end ends a process that can no longer be trusted to answer in turn.
func (c *Child) end(p *childProc) {
	_ = p.cmd.Process.Kill()
	if c.proc == p {
		c.proc = nil
	}
}

// Client is the child as a hook's backend: every call of Client, answered by the child.
func (c *Child) Client() Client { return Client{via: c.send} }

// send makes one call. A context that ends before the call is written ends nothing; one that
// ends while its answer is awaited ends the process.
func (c *Child) send(ctx context.Context, req request) (response, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return response{}, fmt.Errorf("hook backend: %w", ctx.Err())
	}
	defer func() { <-c.turn }()
	if err := ctx.Err(); err != nil {
		return response{}, fmt.Errorf("hook backend: %w", err)
	}
	if c.proc == nil {
		p, err := c.start()
		if err != nil {
			return response{}, err
		}
		c.proc = p
	}
	p := c.proc
	data, err := json.Marshal(req)
	if err != nil {
		return response{}, fmt.Errorf("hook backend: %w", err)
	}
	type result struct {
		line []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		if _, err := p.in.Write(append(data, '\n')); err != nil {
			done <- result{err: err}
			return
		}
		line, err := p.out.ReadBytes('\n')
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			c.end(p)
			return response{}, fmt.Errorf("hook backend: no answer: %w", r.err)
		}
		var res response
		if err := json.Unmarshal(r.line, &res); err != nil {
			c.end(p)
			return response{}, fmt.Errorf("hook backend: answer is not the expected JSON: %w", err)
		}
		return res, res.err()
	case <-ctx.Done():
		c.end(p)
		return response{}, fmt.Errorf("hook backend: no answer in time: %w", ctx.Err())
	}
}

// Close ends the child once its calls are done: its input closes, and it exits on its own after
// closing its connection. The hook does not wait for that; its own exit leaves the child to
// finish.
func (c *Child) Close() error {
	c.turn <- struct{}{}
	defer func() { <-c.turn }()
	if c.proc == nil {
		return nil
	}
	if err := c.proc.in.Close(); err != nil {
		return fmt.Errorf("hook backend: close its input: %w", err)
	}
	return nil
}
