package embedded

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/testkit/otheruser"
)

const (
	sessionTestToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sessionTestPort  = 8233
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// sessions is a session store on the fake clock.
func (c *fakeClock) sessions() *uiSessions {
	s := newUISessions()
	s.now = c.now
	return s
}

func sessionGuard(s *uiSessions) *uiGuard {
	return &uiGuard{port: sessionTestPort, token: sessionTestToken, sessions: s, open: []string{"/healthz"}}
}

func uiHost() string { return "127.0.0.1:" + strconv.Itoa(sessionTestPort) }

func tokenCookie(name string) *http.Cookie { return &http.Cookie{Name: name, Value: sessionTestToken} }

func bearer(v string) map[string]string { return map[string]string{"Authorization": "Bearer " + v} }

// seen records what reached the handler behind the guard.
type seen struct{ cookies, authorization []string }

// serve sends one request through the guard to a handler that answers 200 and records what
// it received.
func serve(t *testing.T, h http.Handler, method, target string, headers map[string]string, cookies []*http.Cookie) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.Host = uiHost()
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func recorder(got *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range r.Cookies() {
			got.cookies = append(got.cookies, c.Name+"="+c.Value)
		}
		got.authorization = append(got.authorization, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte("ui"))
	})
}

// login opens the login URL and returns the session cookie it set.
func login(t *testing.T, h http.Handler) *http.Cookie {
	t.Helper()
	resp := serve(t, h, http.MethodGet, "/namespaces/default/workflows?token="+sessionTestToken+"&x=1", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login URL: %d", resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), sessionTestToken) || !strings.Contains(string(body), `location.replace("/namespaces/default/workflows?x=1")`) {
		t.Fatalf("login page: %s", body)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies, want 1: %v", len(cookies), cookies)
	}
	return cookies[0]
}

// Issue 33 (6): the login URL's token buys a session of its own; the cookie is that session's
// random ID (never the token, nor anything holding it), HttpOnly, SameSite=Strict, Path=/.
func TestUILoginSetsASessionNotTheToken(t *testing.T) {
	clock := newFakeClock()
	var got seen
	h := sessionGuard(clock.sessions()).Wrap(recorder(&got))
	c := login(t, h)
	if c.Name != UISessionCookie(sessionTestPort) || c.Name == trust.CookieName {
		t.Errorf("cookie name %q, want %q", c.Name, UISessionCookie(sessionTestPort))
	}
	if c.Value == sessionTestToken || strings.Contains(c.Value, sessionTestToken) || strings.Contains(c.Value, sessionTestToken[:16]) {
		t.Fatalf("the cookie holds the token: %q", c.Value)
	}
	if len(c.Value) < 43 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != int(UISessionLifetime/time.Second) {
		t.Errorf("cookie %+v: want a 43-character ID, HttpOnly, SameSite=Strict, Path=/, Max-Age of the lifetime", c)
	}
	if other := login(t, h); other.Value == c.Value {
		t.Errorf("two logins got the same session ID %q", c.Value)
	}
	if resp := serve(t, h, http.MethodGet, "/?token=wrong", nil, nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d %v, want 401 and no cookie", resp.StatusCode, resp.Cookies())
	}
	if len(got.cookies) != 0 {
		t.Errorf("the login reached the UI: %v", got.cookies)
	}
}

// The session cookie opens the UI; the token as a cookie (under the old name or the session's)
// opens nothing; the token as a bearer header still does (programs; a browser never sends that
// header on its own); a session ID as a bearer header does not. The session ID and a token
// cookie stop at the guard.
func TestUISessionOpensOnlyTheUI(t *testing.T) {
	clock := newFakeClock()
	var got seen
	h := sessionGuard(clock.sessions()).Wrap(recorder(&got))
	c := login(t, h)
	other := &http.Cookie{Name: "_csrf", Value: "ui-server's"}
	cases := []struct {
		name    string
		method  string
		headers map[string]string
		cookies []*http.Cookie
		want    int
	}{
		{"session cookie", http.MethodGet, nil, []*http.Cookie{c, other}, http.StatusOK},
		{"session cookie and a wrong bearer", http.MethodGet, bearer("nope"), []*http.Cookie{c}, http.StatusOK},
		{"token as the old cookie", http.MethodGet, nil, []*http.Cookie{tokenCookie(trust.CookieName)}, http.StatusUnauthorized},
		{"token as the session cookie", http.MethodGet, nil, []*http.Cookie{tokenCookie(UISessionCookie(sessionTestPort))}, http.StatusUnauthorized},
		{"session ID as a bearer", http.MethodGet, bearer(c.Value), nil, http.StatusUnauthorized},
		{"token as a bearer", http.MethodGet, bearer(sessionTestToken), nil, http.StatusOK},
		{"nothing", http.MethodGet, nil, nil, http.StatusUnauthorized},
		{"health", http.MethodGet, nil, nil, http.StatusOK},
		{"session POST without Origin", http.MethodPost, nil, []*http.Cookie{c}, http.StatusForbidden},
		{"session POST same origin", http.MethodPost, map[string]string{"Origin": "http://" + uiHost()}, []*http.Cookie{c}, http.StatusOK},
		{"session POST foreign origin", http.MethodPost, map[string]string{"Origin": "http://evil.example"}, []*http.Cookie{c}, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/v1/namespaces/default/workflows"
			if tc.name == "health" {
				path = "/healthz"
			}
			got = seen{}
			resp := serve(t, h, tc.method, path, tc.headers, tc.cookies)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want != http.StatusOK && resp.Header.Get("Connection") != "close" {
				t.Errorf("a refused request keeps its connection (Connection %q)", resp.Header.Get("Connection"))
			}
			for _, v := range got.cookies {
				if strings.Contains(v, c.Value) || strings.Contains(v, sessionTestToken) || strings.HasPrefix(v, trust.CookieName+"=") {
					t.Errorf("the UI behind the guard got the cookie %q", v)
				}
			}
			if tc.name == "session cookie" && (len(got.cookies) != 1 || got.cookies[0] != "_csrf=ui-server's") {
				t.Errorf("the UI's own cookies: %v, want _csrf only", got.cookies)
			}
		})
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/workflows", nil)
	r.Host = "rebind.attacker.example:" + strconv.Itoa(sessionTestPort)
	r.AddCookie(c)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("session through a rebinding Host: %d, want 403", w.Code)
	}
}

// A session ID is no credential of the gRPC frontend (nor of any listener that takes the
// token: they compare with the token only).
func TestUISessionIsNoFrontendCredential(t *testing.T) {
	g := sessionGuard(newFakeClock().sessions())
	c := login(t, g.Wrap(recorder(&seen{})))
	claims, err := ClaimMapper(sessionTestToken).GetClaims(&authorization.AuthInfo{AuthToken: "Bearer " + c.Value})
	if err != nil || claims != nil {
		t.Fatalf("the frontend's claims for a session ID: %+v %v, want none", claims, err)
	}
}

// A session ends after UISessionIdle without a request, after UISessionLifetime however busy,
// and at logout (which clears the cookie); a refused session answers 401.
func TestUISessionExpiresAndLogsOut(t *testing.T) {
	clock := newFakeClock()
	h := sessionGuard(clock.sessions()).Wrap(recorder(&seen{}))
	open := func(c *http.Cookie) int {
		return serve(t, h, http.MethodGet, "/namespaces/default/workflows", nil, []*http.Cookie{c}).StatusCode
	}

	idle := login(t, h)
	clock.advance(UISessionIdle - time.Second)
	if code := open(idle); code != http.StatusOK {
		t.Fatalf("within the idle time: %d", code)
	}
	clock.advance(UISessionIdle)
	if code := open(idle); code != http.StatusUnauthorized {
		t.Errorf("idle for %s: %d, want 401", UISessionIdle, code)
	}

	busy := login(t, h)
	for elapsed := time.Duration(0); elapsed+UISessionIdle/2 < UISessionLifetime; elapsed += UISessionIdle / 2 {
		clock.advance(UISessionIdle / 2)
		if code := open(busy); code != http.StatusOK {
			t.Fatalf("busy session at %s: %d", elapsed+UISessionIdle/2, code)
		}
	}
	clock.advance(UISessionIdle / 2)
	if code := open(busy); code != http.StatusUnauthorized {
		t.Errorf("busy session past its lifetime: %d, want 401", code)
	}

	out := login(t, h)
	resp := serve(t, h, http.MethodGet, UILogoutPath, nil, []*http.Cookie{out})
	cleared := resp.Cookies()
	if resp.StatusCode != http.StatusOK || len(cleared) != 1 || cleared[0].Name != out.Name || cleared[0].MaxAge >= 0 || cleared[0].Value != "" {
		t.Errorf("logout: %d %v, want 200 and the cookie cleared", resp.StatusCode, cleared)
	}
	if code := open(out); code != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401", code)
	}
}

// A flood of logins holds at most MaxUISessions; the newest stay in, the least recently used
// go first.
func TestUISessionsBounded(t *testing.T) {
	clock := newFakeClock()
	s := clock.sessions()
	h := sessionGuard(s).Wrap(recorder(&seen{}))
	first := login(t, h)
	var last *http.Cookie
	for i := 0; i < 3*MaxUISessions; i++ {
		clock.advance(time.Second)
		last = login(t, h)
	}
	if n := s.count(); n != MaxUISessions {
		t.Errorf("%d sessions held after %d logins, want %d", n, 3*MaxUISessions+1, MaxUISessions)
	}
	if code := serve(t, h, http.MethodGet, "/", nil, []*http.Cookie{first}).StatusCode; code != http.StatusUnauthorized {
		t.Errorf("the oldest session: %d, want 401 (ended)", code)
	}
	if code := serve(t, h, http.MethodGet, "/", nil, []*http.Cookie{last}).StatusCode; code != http.StatusOK {
		t.Errorf("the newest session: %d, want 200", code)
	}
}

// Issue 33 (8): the UI listener closes a kept-alive connection that sends nothing more within its
// idle timeout, a silent new connection within its header timeout, and a connection whose request
// was refused for want of a credential at once.
func TestUIListenerClosesIdleConnections(t *testing.T) {
	short := uiTimeouts{readHeader: 300 * time.Millisecond, read: time.Minute, write: time.Minute, idle: 300 * time.Millisecond}
	long := uiTimeouts{readHeader: time.Minute, read: time.Minute, write: time.Minute, idle: time.Minute}
	for _, tc := range []struct {
		name    string
		limits  uiTimeouts
		request string // "" sends nothing
		status  int
	}{
		{"kept alive, then idle", short, "GET /healthz HTTP/1.1\r\nHost: " + uiHost() + "\r\n\r\n", http.StatusOK},
		{"silent", short, "", 0},
		{"no credential", long, "GET /api/v1/namespaces HTTP/1.1\r\nHost: " + uiHost() + "\r\n\r\n", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := newUIServer(sessionGuard(newUISessions()).Wrap(recorder(&seen{})), zap.NewNop(), tc.limits)
			go func() { _ = srv.Serve(l) }()
			defer srv.Close()
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The deadline is the test's bound on the wait, far above the server's limit (or, for
			// the refused request, far below its idle timeout).
			if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			if tc.request != "" {
				if _, err := io.WriteString(conn, tc.request); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
			}
			start := time.Now()
			_, err = br.ReadByte()
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept the connection open for %s", time.Since(start))
			}
			if !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("read after the response: %v, want the server's close", err)
			}
		})
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// Issue 61, finding 7: browsers send 127.0.0.1's cookies to every port, and another local user's
// server got the Web UI's session cookie; replayed from that user's connection, it listed
// workflows and decrypted through the UI's codec. A session counts only on connections of the
// local user who logged in: another user's replay is refused (403, the session still the
// person's), the person's own connection is served, the token as a bearer header still opens the
// UI from anyone, and where users cannot be told apart the session keeps its old rule.
func TestUISessionOnlyForTheUserWhoLoggedIn(t *testing.T) {
	const own, other = "127.0.0.1:40000", "127.0.0.1:40001"
	users := func(err error) trust.PeerUIDFunc {
		return func(_, remote net.Addr) (int, error) {
			if err != nil {
				return 0, err
			}
			if remote != nil && remote.String() == other {
				return 65534, nil
			}
			return os.Getuid(), nil
		}
	}
	from := func(h http.Handler, remote string, c *http.Cookie, headers map[string]string) *http.Response {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/workflows", nil)
		r.Host, r.RemoteAddr = uiHost(), remote
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		if c != nil {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	loginFrom := func(h http.Handler, remote string) *http.Cookie {
		r := httptest.NewRequest(http.MethodGet, "/?token="+sessionTestToken, nil)
		r.Host, r.RemoteAddr = uiHost(), remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || len(w.Result().Cookies()) != 1 {
			t.Fatalf("login from %s: %d", remote, w.Code)
		}
		return w.Result().Cookies()[0]
	}

	g := sessionGuard(newFakeClock().sessions())
	g.peerUID = users(nil)
	h := g.Wrap(recorder(&seen{}))
	c := loginFrom(h, own)
	if resp := from(h, other, c, nil); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Connection") != "close" {
		t.Errorf("another user's replay of the cookie: %d, want 403 and the connection closed", resp.StatusCode)
	}
	if resp := from(h, own, c, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the person's own connection after the replay: %d, want 200", resp.StatusCode)
	}
	if resp := from(h, other, c, bearer(sessionTestToken)); resp.StatusCode != http.StatusOK {
		t.Errorf("the token as a bearer header from another user: %d, want 200 (it is the credential)", resp.StatusCode)
	}
	theirs := loginFrom(h, other)
	if resp := from(h, own, theirs, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a session another user opened, used from this user's connection: %d, want 403", resp.StatusCode)
	}

	notFound := sessionGuard(newFakeClock().sessions())
	notFound.peerUID = users(errors.New("no socket"))
	if resp := serve(t, notFound.Wrap(recorder(&seen{})), http.MethodGet, "/?token="+sessionTestToken, nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login whose user this system cannot find: %d, want 403", resp.StatusCode)
	}

	unknown := sessionGuard(newFakeClock().sessions())
	unknown.peerUID = users(trust.ErrPeerUnknown)
	hu := unknown.Wrap(recorder(&seen{}))
	cu := loginFrom(hu, own)
	if resp := from(hu, other, cu, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("where users cannot be told apart: %d, want 200 (the old rule)", resp.StatusCode)
	}
}

// The same through the Web UI's real listener, as root: a process of another local user
// (uid 65534) that replays the person's session cookie gets 403; the person's own connection
// is served.
func TestUISessionReplayedByAnotherUserIsRefused(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: the peer's user cannot be told on this system")
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	g := &uiGuard{port: port, token: sessionTestToken, sessions: newUISessions(), open: []string{"/healthz"}}
	srv := newUIServer(g.Wrap(recorder(&seen{})), zap.NewNop(), defaultUITimeouts)
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	addr := l.Addr().String()

	resp, err := http.Get("http://" + addr + "/?token=" + sessionTestToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusOK || len(cookies) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, cookies)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/namespaces", nil)
	req.AddCookie(cookies[0])
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the person's own connection: %d, want 200", resp.StatusCode)
	}
	answer := otheruser.Request(t, addr, "GET /api/v1/namespaces HTTP/1.1\r\nHost: "+addr+"\r\nCookie: "+
		cookies[0].Name+"="+cookies[0].Value+"\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(answer, "HTTP/1.1 403") {
		line, _, _ := strings.Cut(answer, "\r\n")
		t.Fatalf("another user's replay of the session cookie: %q, want 403", line)
	}
}
