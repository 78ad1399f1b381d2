// Package desksocket is the hook desk's socket, both ends: the worker's server (Listen), which
// answers with its desk (package hookdesk) and its Temporal client, and the hook's Client. It does
// not import the Temporal SDK: the hook binary (intentq-hook) reaches the desk through it and
// starts in a few milliseconds. The commits a hook records when no desk answers are here too
// (RecordCommit), for the next worker's desk to apply.
package desksocket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/hookapi"
)

// The desk's socket: a Unix socket that only this user may open (its folder, data_dir, is this
// user's and 0700, the socket 0600), and that answers only a peer of this user (SO_PEERCRED)
// that sends the access token (data_dir/access.token): loopback is no boundary, and neither is
// one file mode alone. Its folder is reached by descriptor (sockdir.go).

// MaxRequest bounds one request (a take's receipt names a few intents).
const MaxRequest = 1 << 20

// ioTimeout bounds one exchange on the socket.
const ioTimeout = 5 * time.Second

// Reader answers the hooks' reads, and the calls on intents and inboxes they make, with the
// worker's own Temporal client (hooktemporal.Temporal): a hook that goes through the desk needs
// no connection of its own.
type Reader interface {
	PendingPage(ctx context.Context, f hookapi.Filter, limit int) (hookapi.Page, error)
	Unread(ctx context.Context, agent string) (hookapi.InboxUnread, error)
	Text(ctx context.Context, id string) (string, error)
	Close(ctx context.Context, id string) error
	CloseOldest(ctx context.Context, chat string) (string, error)
	SendInbox(ctx context.Context, agent string, msg hookapi.InboxSend) error
	// Had asks a session which of intents' messages its agent has in its context
	// (hookapi.QueryHad).
	Had(ctx context.Context, session string, intents []string) ([]hookapi.HadMessage, error)
}

// maxResponse bounds an answer a hook reads (a page of intents with their texts, an inbox).
const maxResponse = 16 << 20

// request is one call on the socket.
type request struct {
	Token   string               `json:"token"`
	Op      string               `json:"op"`
	Session string               `json:"session"`
	Take    *hookapi.TakeRequest `json:"take,omitempty"`
	Key     string               `json:"key,omitempty"`
	Text    string               `json:"text,omitempty"`
	Event   *hookapi.AgentEvent  `json:"event,omitempty"`
	Filter  *hookapi.Filter      `json:"filter,omitempty"`
	Limit   int                  `json:"limit,omitempty"`
	Agent   string               `json:"agent,omitempty"`
	// ID is an intent's workflow ID (opText, opClose), Chat a chat (opCloseOldest).
	ID   string             `json:"id,omitempty"`
	Chat string             `json:"chat,omitempty"`
	Send *hookapi.InboxSend `json:"send,omitempty"`
	// Intents are the intents a session is asked about (opHad).
	Intents []string `json:"intents,omitempty"`
}

// response is the desk's answer.
type response struct {
	Error string              `json:"error,omitempty"`
	Take  *hookapi.TakeResult `json:"take,omitempty"`
	// Page is a page of pending intents, Texts their full texts in its order (a Summary does
	// not carry its text in JSON).
	Page  *hookapi.Page `json:"page,omitempty"`
	Texts []string      `json:"texts,omitempty"`
	// Unread is what is unread in an agent's inbox (opUnread).
	Unread *hookapi.InboxUnread `json:"unread,omitempty"`
	// Text is an intent's full text (opText), ID the intent closed (opCloseOldest).
	Text string `json:"text,omitempty"`
	ID   string `json:"id,omitempty"`
	// Had are the asked intents whose message the session's agent has (opHad).
	Had []hookapi.HadMessage `json:"had,omitempty"`
	// Code names an error the hook acts on: codeNotFound, codeNotOpen.
	Code string `json:"code,omitempty"`
}

// Codes of the errors a hook acts on (hookapi.ErrNotFound, hookapi.ErrNotOpen, ErrUnknownCall).
const (
	codeNotFound    = "not-found"
	codeNotOpen     = "not-open"
	codeUnknownCall = "unknown-call"
)

// ErrUnknownCall says the desk does not know the call (a worker of an older build): nothing was
// done, the hook makes the call another way.
var ErrUnknownCall = errors.New("the hook desk does not know this call")

// Operations on the socket.
const (
	opTake    = "take"
	opCommit  = "commit"
	opReport  = "report"
	opContext = "context"
	opPending = "pending"
	opUnread  = "unread"
	// Calls on intents and inboxes, made with the worker's client (Reader).
	opText        = "text"
	opClose       = "close"
	opCloseOldest = "close-oldest"
	opSendInbox   = "send-inbox"
	opHad         = "had"
)

// Desk is what the socket serves: the worker's hook desk (hookdesk.Desk).
type Desk interface {
	Take(session string, req hookapi.TakeRequest) (hookapi.TakeResult, error)
	Commit(session, key string) error
	Report(session string, ev hookapi.AgentEvent) error
	Context(session, id, text string) error
	// UnreadInbox is what the agent's session last said is unread in its inbox; known is false
	// when it has said nothing yet.
	UnreadInbox(agent string) (u hookapi.InboxUnread, known bool)
	// PassOn passes on to the sessions, before it returns, the words the desk holds for them
	// (the hooks' commits): a session's word on what its agent had counts them then.
	PassOn(ctx context.Context) error
}

// Server is the desk's listener.
type Server struct {
	ln     *net.UnixListener
	dir    *socketDir
	path   string
	desk   Desk
	reader Reader
	token  string
	log    *zap.Logger
	wg     sync.WaitGroup
}

// Listen serves the desk, and reader (nil: none), on path (SocketPath) for the hooks that
// present token.
func Listen(path string, desk Desk, reader Reader, token string, log *zap.Logger) (*Server, error) {
	if token == "" {
		return nil, errors.New("hook desk: no access token")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("hook desk: %w", err)
	}
	dir, err := openSocketDir(path, unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("hook desk: %w", err)
	}
	ln, err := listenIn(dir, path)
	if err != nil {
		_ = dir.close()
		return nil, fmt.Errorf("hook desk: %w", err)
	}
	s := &Server{ln: ln, dir: dir, path: path, desk: desk, reader: reader, token: token, log: log}
	s.wg.Go(s.serve)
	return s, nil
}

// listenIn binds the socket in its open folder, once the folder is this user's and private.
func listenIn(dir *socketDir, path string) (*net.UnixListener, error) {
	if err := dir.private(); err != nil {
		return nil, err
	}
	// A socket left by a worker that died is replaced; one another worker serves is not.
	if c, err := net.DialTimeout("unix", dir.addr(), time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("%s is served by another worker", path)
	}
	if err := dir.unlink(); err != nil {
		return nil, err
	}
	// No umask of its own: the umask is the process's, and other goroutines create files and
	// folders meanwhile. The folder is private already, so no other user can open the socket
	// before its mode is set.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: dir.addr(), Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The address names a descriptor that Close must still hold: Close unlinks by the folder.
	ln.SetUnlinkOnClose(false)
	if err := dir.chmod(0o600); err != nil {
		_ = ln.Close()
		_ = dir.unlink()
		return nil, err
	}
	return ln, nil
}

// Addr is the socket's path.
func (s *Server) Addr() string { return s.path }

// Close stops listening, removes the socket and waits for the calls being answered.
func (s *Server) Close() error {
	err := s.ln.Close()
	if uerr := s.dir.unlink(); err == nil {
		err = uerr
	}
	if cerr := s.dir.close(); err == nil {
		err = cerr
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("hook desk: close: %w", err)
	}
	return nil
}

func (s *Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() {
			defer c.Close()
			s.answer(c)
		})
	}
}

// answer serves one call: a peer of this user with the token, one request, one answer.
func (s *Server) answer(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if err := samePeer(c); err != nil {
		s.log.Warn("hook desk: call refused", zap.Error(err))
		return
	}
	line, err := bufio.NewReader(&limited{c, MaxRequest}).ReadBytes('\n')
	switch {
	case errors.Is(err, io.EOF) && len(line) == 0:
		return // a ping (Client.Ping): it connected to see that a desk listens, and left
	case err != nil:
		s.log.Warn("hook desk: call unreadable", zap.Error(err))
		return
	}
	var req request
	var res response
	switch err := json.Unmarshal(line, &req); {
	case err != nil:
		res.Error = "request is not the expected JSON: " + err.Error()
	case !trust.TokenEqual(req.Token, s.token):
		s.log.Warn("hook desk: call without the access token refused")
		res.Error = "access token required"
	default:
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		res = answerCall(ctx, s.desk, s.reader, req)
		cancel()
	}
	data, _ := json.Marshal(res)
	_, _ = c.Write(append(data, '\n'))
}

// answerCall answers one request with desk and reader (nil: no reader) within ctx.
func answerCall(ctx context.Context, desk Desk, reader Reader, req request) response {
	var res response
	var err error
	switch {
	case req.Op == opTake && req.Take != nil:
		var t hookapi.TakeResult
		t, err = desk.Take(req.Session, *req.Take)
		res.Take = &t
	case req.Op == opCommit:
		err = desk.Commit(req.Session, req.Key)
	case req.Op == opReport && req.Event != nil:
		err = desk.Report(req.Session, *req.Event)
	case req.Op == opContext:
		err = desk.Context(req.Session, req.Key, req.Text)
	case req.Op == opPending && req.Filter != nil && reader != nil:
		var page hookapi.Page
		if page, err = reader.PendingPage(ctx, *req.Filter, req.Limit); err == nil {
			res.Page = &page
			for _, p := range page.Intents {
				res.Texts = append(res.Texts, p.Text)
			}
		}
	case req.Op == opUnread:
		// What the agent's session said (issue 38: the inbox tells it after every change), else
		// the inbox asked through the worker's client. A word that names unread messages is read
		// again first (a Stop it blocks costs the agent a turn, and the agent may have read them
		// a moment ago, before its session's word reached the desk); "nothing unread" is not.
		u, known := desk.UnreadInbox(req.Agent)
		if (!known || u.Count > 0) && reader != nil {
			if read, rerr := reader.Unread(ctx, req.Agent); rerr == nil {
				u, known = read, true
			} else if !known {
				err = rerr
			}
		}
		if known {
			res.Unread = &u
		} else if err == nil {
			err = errors.New("no reader of the inboxes here")
		}
	case req.Op == opText && reader != nil:
		res.Text, err = reader.Text(ctx, req.ID)
	case req.Op == opClose && reader != nil:
		err = reader.Close(ctx, req.ID)
	case req.Op == opCloseOldest && reader != nil:
		res.ID, err = reader.CloseOldest(ctx, req.Chat)
	case req.Op == opSendInbox && req.Send != nil && reader != nil:
		err = reader.SendInbox(ctx, req.Agent, *req.Send)
	case req.Op == opHad && reader != nil:
		// A hook that handed a message over committed it here moments ago (a compaction right
		// after a tool call's hook): its commit goes to the session before the session is asked.
		if err = desk.PassOn(ctx); err == nil {
			res.Had, err = reader.Had(ctx, req.Session, req.Intents)
		}
	default:
		err = fmt.Errorf("unknown call %q", req.Op)
		res.Code = codeUnknownCall
	}
	if err != nil {
		res = response{Error: err.Error(), Code: res.Code}
		switch {
		case errors.Is(err, hookapi.ErrNotFound):
			res.Code = codeNotFound
		case errors.Is(err, hookapi.ErrNotOpen):
			res.Code = codeNotOpen
		}
	}
	return res
}

// samePeer refuses a peer that runs as another user.
func samePeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("peer credentials: %w", credErr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer runs as uid %d, not this user's %d", cred.Uid, os.Getuid())
	}
	return nil
}

// limited reads at most n bytes, then fails.
type limited struct {
	c net.Conn
	n int
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("over the size limit")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.n -= n
	return n, err
}

// Client is a hook's way to the desk.
type Client struct {
	// Path is the desk's socket (SocketPath), Token the access token.
	Path  string
	Token string
	// via, when set, carries the calls instead of the socket (Child.Client).
	via func(ctx context.Context, req request) (response, error)
}

// ErrNoDesk says no desk answers on the socket (no worker runs here): the hook goes the slow way.
var ErrNoDesk = errors.New("no hook desk answers")

func (c Client) call(ctx context.Context, req request) (response, error) {
	if c.via != nil {
		return c.via(ctx, req)
	}
	req.Token = c.Token
	conn, err := c.connect(ctx)
	if err != nil {
		return response{}, err
	}
	defer conn.Close()
	deadline := time.Now().Add(ioTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	data, err := json.Marshal(req)
	if err != nil {
		return response{}, err
	}
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return response{}, fmt.Errorf("hook desk: %w", err)
	}
	line, err := bufio.NewReader(&limited{conn, maxResponse}).ReadBytes('\n')
	if err != nil {
		return response{}, fmt.Errorf("hook desk: no answer: %w", err)
	}
	var res response
	if err := json.Unmarshal(line, &res); err != nil {
		return response{}, fmt.Errorf("hook desk: answer is not the expected JSON: %w", err)
	}
	return res, res.err()
}

// err is the error an answer carries: the intent errors a hook acts on as themselves.
func (res response) err() error {
	switch {
	case res.Error == "":
		return nil
	case res.Code == codeNotFound:
		return fmt.Errorf("hook desk: %s: %w", res.Error, hookapi.ErrNotFound)
	case res.Code == codeNotOpen:
		return fmt.Errorf("hook desk: %s: %w", res.Error, hookapi.ErrNotOpen)
	case res.Code == codeUnknownCall || res.Code == "" && strings.HasPrefix(res.Error, "unknown call "):
		// A desk of an older build answers a call it does not know without a code.
		return fmt.Errorf("hook desk: %s: %w", res.Error, ErrUnknownCall)
	}
	return fmt.Errorf("hook desk: %s", res.Error)
}

// connect reaches the desk: a socket of this user's (the token goes only to a desk of this
// user's: a socket in a folder others may enter could be another's). Its errors wrap ErrNoDesk.
func (c Client) connect(ctx context.Context) (net.Conn, error) {
	conn, err := dial(ctx, c.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDesk, err)
	}
	if err := samePeer(conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoDesk, err)
	}
	return conn, nil
}

// Ping says whether a desk of this user's listens on the socket (an error wrapping ErrNoDesk
// when none does); it sends nothing.
func (c Client) Ping(ctx context.Context) error {
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	return conn.Close()
}

// dial connects to the socket at path through a descriptor of its folder (an address short
// whatever the path's length).
func dial(ctx context.Context, path string) (net.Conn, error) {
	dir, err := openSocketDir(path, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer dir.close()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", dir.addr())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	return conn, nil
}

// Take asks the desk for the session's standing offer.
func (c Client) Take(ctx context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	res, err := c.call(ctx, request{Op: opTake, Session: session, Take: &req})
	if err != nil {
		return hookapi.TakeResult{}, err
	}
	if res.Take == nil {
		return hookapi.TakeResult{}, errors.New("hook desk: take answered without a result")
	}
	return *res.Take, nil
}

// Taken commits a take the hook printed.
func (c Client) Taken(ctx context.Context, session, key string) error {
	_, err := c.call(ctx, request{Op: opCommit, Session: session, Key: key})
	return err
}

// Report passes a hook's report on to its session.
func (c Client) Report(ctx context.Context, session string, ev hookapi.AgentEvent) error {
	_, err := c.call(ctx, request{Op: opReport, Session: session, Event: &ev})
	return err
}

// CommitContext passes on a block the hook printed that no take handed over.
func (c Client) CommitContext(ctx context.Context, session, id, text string) error {
	_, err := c.call(ctx, request{Op: opContext, Session: session, Key: id, Text: text})
	return err
}

// PendingPage lists pending intents through the worker's client.
func (c Client) PendingPage(ctx context.Context, f hookapi.Filter, limit int) (hookapi.Page, error) {
	res, err := c.call(ctx, request{Op: opPending, Filter: &f, Limit: limit})
	if err != nil {
		return hookapi.Page{}, err
	}
	if res.Page == nil {
		return hookapi.Page{}, errors.New("hook desk: no page in the answer")
	}
	for i := range res.Page.Intents {
		if i < len(res.Texts) {
			res.Page.Intents[i].Text = res.Texts[i]
		}
	}
	return *res.Page, nil
}

// Unread is what is unread in an agent's inbox: as its session told the desk, else read
// through the worker's client.
func (c Client) Unread(ctx context.Context, agent string) (hookapi.InboxUnread, error) {
	res, err := c.call(ctx, request{Op: opUnread, Agent: agent})
	if err != nil {
		return hookapi.InboxUnread{}, err
	}
	if res.Unread == nil { // a worker from before it answered this
		return hookapi.InboxUnread{}, errors.New("hook desk: no unread inbox in the answer")
	}
	return *res.Unread, nil
}

// Text is an intent's full text, read with the worker's client.
func (c Client) Text(ctx context.Context, id string) (string, error) {
	res, err := c.call(ctx, request{Op: opText, ID: id})
	return res.Text, err
}

// Close closes an intent with the worker's client.
func (c Client) Close(ctx context.Context, id string) error {
	_, err := c.call(ctx, request{Op: opClose, ID: id})
	return err
}

// CloseOldest closes a chat's oldest pending intent with the worker's client.
func (c Client) CloseOldest(ctx context.Context, chat string) (string, error) {
	res, err := c.call(ctx, request{Op: opCloseOldest, Chat: chat})
	return res.ID, err
}

// SendInbox puts a message in an agent's inbox with the worker's client.
func (c Client) SendInbox(ctx context.Context, agent string, msg hookapi.InboxSend) error {
	_, err := c.call(ctx, request{Op: opSendInbox, Agent: agent, Send: &msg})
	return err
}

// Had asks a session, with the worker's client, which of intents' messages its agent has in its
// context.
func (c Client) Had(ctx context.Context, session string, intents []string) ([]hookapi.HadMessage, error) {
	res, err := c.call(ctx, request{Op: opHad, Session: session, Intents: intents})
	return res.Had, err
}
