package embedded

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/intentq/intentq/internal/base/trust"
)

// The Web UI's login (issue 33): the login URL carries the access token once, and the browser
// gets a session of its own in return, never the token. Browsers send a 127.0.0.1 cookie to every
// port of the host, so any local HTTP server the browser visits reads it: a session ID opens
// this Web UI only (not the gRPC frontend, the hook desk, ingest or the ingest codec, which know
// only the token), until it expires or the person logs out; and it opens it only on connections
// of the local user who logged in (issue 61: another user's server got the cookie and replayed
// it), where the system can tell (trust.PeerUID: Linux).
const (
	// UISessionLifetime is how long a login lasts at most, however busy: then `starter ui` (or
	// the worker's ready line) logs in again.
	UISessionLifetime = 12 * time.Hour
	// UISessionIdle ends a login that has made no request for this long.
	UISessionIdle = time.Hour
	// MaxUISessions bounds the logins held at once (in the worker's memory: a restart logs every
	// browser out); a login beyond it ends the least recently used one.
	MaxUISessions = 32
	// UILogoutPath ends the browser's session (GET or POST) and clears its cookie.
	UILogoutPath = "/intentq/logout"
)

// sessionIDBytes is a session ID's entropy: 32 random bytes, 43 base64url characters.
const sessionIDBytes = 32

// UISessionCookie is the name of the cookie that carries the Web UI's session ID on the UI
// listening on port. The port is in the name because cookies are not kept apart by port: two
// intentq workers on one machine (or the ingest codec's login) would overwrite each other's.
func UISessionCookie(port int) string { return "intentq_ui_" + strconv.Itoa(port) }

// uiSessions holds the live Web UI logins, by the SHA-256 of their ID: a lookup compares hashes,
// so its timing says nothing about the IDs held. The zero value is not usable: newUISessions.
type uiSessions struct {
	mu             sync.Mutex
	live           map[[sha256.Size]byte]*uiSession
	lifetime, idle time.Duration
	max            int
	now            func() time.Time
}

// uiSession is one login: when it began, when it last made a request, and whose it is.
type uiSession struct {
	created, seen time.Time
	user          localUser
}

// localUser is the local user at the far end of a connection, when it can be told.
type localUser struct {
	uid   int
	known bool
}

// owns reports whether a request from u may use a session that user opened: the same uid, or
// a session whose user could not be told (the rule before users were told apart).
func (user localUser) owns(u localUser) bool {
	return !user.known || (u.known && u.uid == user.uid)
}

func newUISessions() *uiSessions {
	return &uiSessions{live: map[[sha256.Size]byte]*uiSession{}, lifetime: UISessionLifetime, idle: UISessionIdle,
		max: MaxUISessions, now: time.Now}
}

// mint starts a session of user's and returns its ID. Expired sessions go first; when the store
// is still full, the least recently used session ends.
func (s *uiSessions) mint(user localUser) (string, error) {
	buf := make([]byte, sessionIDBytes)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("web UI session: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.live {
		if s.expired(v, now) {
			delete(s.live, k)
		}
	}
	for len(s.live) >= s.max {
		var oldest [sha256.Size]byte
		var seen time.Time
		for k, v := range s.live {
			if seen.IsZero() || v.seen.Before(seen) {
				oldest, seen = k, v.seen
			}
		}
		delete(s.live, oldest)
	}
	s.live[sha256.Sum256([]byte(id))] = &uiSession{created: now, seen: now, user: user}
	return id, nil
}

// valid reports whether id is a live session that a request from u may use, and counts the
// request as its latest use; foreign: id is live, but another local user's (the request is not
// counted). An expired session is deleted.
func (s *uiSessions) valid(id string, u localUser) (ok, foreign bool) {
	if id == "" {
		return false, false
	}
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, live := s.live[key]
	if !live {
		return false, false
	}
	now := s.now()
	if s.expired(v, now) {
		delete(s.live, key)
		return false, false
	}
	if !v.user.owns(u) {
		return false, true
	}
	v.seen = now
	return true, false
}

// revoke ends the session id (nothing when it is not live).
func (s *uiSessions) revoke(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, sha256.Sum256([]byte(id)))
}

// count is the number of sessions held, expired ones not yet deleted included.
func (s *uiSessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

func (s *uiSessions) expired(v *uiSession, now time.Time) bool {
	return now.Sub(v.created) >= s.lifetime || now.Sub(v.seen) >= s.idle
}

// uiGuard is the Web UI listener's boundary: trust.Guard's Host and Origin allowlist, then a
// credential, which is a login session's cookie (the browser) or the access token as a bearer
// header (a program; a browser never sends that header on its own). The access token is never
// a cookie, and a session ID is never a bearer token. A session's cookie counts only on a
// connection of the local user who logged in (browsers send it to every port of 127.0.0.1,
// other users' servers included). A request refused for want of a credential gets its
// connection closed, so that none is held open without one.
type uiGuard struct {
	port     int
	token    string
	sessions *uiSessions
	// open are paths served without a credential (still behind the Host check): health checks.
	open []string
	// peerUID finds the local user of a request's connection (nil: trust.LookupPeerUID).
	peerUID trust.PeerUIDFunc
}

// user is the local user at the far end of r's connection; err when this system can tell
// users apart but not this connection's.
func (g *uiGuard) user(r *http.Request) (localUser, error) {
	uid, err := trust.PeerUID(r, g.peerUID)
	switch {
	case err == nil:
		return localUser{uid: uid, known: true}, nil
	case errors.Is(err, trust.ErrPeerUnknown):
		return localUser{}, nil
	default:
		return localUser{}, err
	}
}

// Wrap returns next behind the guard. Requests reach next without the session cookie (the
// session ID goes no further than the guard) and without a token cookie.
func (g *uiGuard) Wrap(next http.Handler) http.Handler {
	bearer := trust.Guard{Port: g.port, Token: g.token, Open: g.open}.Wrap(next)
	name := UISessionCookie(g.port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trust.HostAllowed(r.Host, g.port) {
			refuse(w, "forbidden: this server answers only to its loopback address (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		if !trust.OriginAllowed(r.Header.Get("Origin"), g.port) {
			refuse(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
		id := cookieValue(r, name)
		switch {
		case r.URL.Path == UILogoutPath:
			g.logout(w, id)
			return
		case r.Method == http.MethodGet && r.URL.Query().Get(trust.LoginParam) != "":
			g.login(w, r, id)
			return
		}
		r = withoutCookies(r, name, trust.CookieName)
		var user localUser
		if id != "" {
			user, _ = g.user(r) // not told: matches only a session whose user was not told either
		}
		ok, foreign := g.sessions.valid(id, user)
		if foreign && !trust.TokenEqual(trust.BearerToken(r.Header.Get("Authorization")), g.token) {
			refuse(w, "forbidden: this Web UI login belongs to another local user's browser: log in from your own (`starter ui`)", http.StatusForbidden)
			return
		}
		if ok {
			// The browser sends the cookie on its own: an unsafe method must come from this
			// origin (Origin checked above, or a same-origin Referer).
			if unsafeMethod(r.Method) && r.Header.Get("Origin") == "" && !refererAllowed(r, g.port) {
				refuse(w, "forbidden: a state-changing request needs an Origin header", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if !g.isOpen(r.URL.Path) && !trust.TokenEqual(trust.BearerToken(r.Header.Get("Authorization")), g.token) {
			w.Header().Set("Connection", "close")
		}
		bearer.ServeHTTP(w, r)
	})
}

// login checks the token of the login URL, starts a session, sets its ID as the cookie (ending
// the session the browser held before, if any) and sends the browser on to the URL without the
// token. It does so from a page, not with a redirect: a SameSite=Strict cookie is not sent on a
// redirect of a navigation that began on another site (the login page `starter ui --open`
// writes, a link in a mail), while a navigation this origin's own page starts carries it.
func (g *uiGuard) login(w http.ResponseWriter, r *http.Request, old string) {
	if !trust.TokenEqual(r.URL.Query().Get(trust.LoginParam), g.token) {
		refuse(w, "unauthorized: wrong token", http.StatusUnauthorized)
		return
	}
	user, err := g.user(r)
	if err != nil {
		refuse(w, "forbidden: cannot tell which local user this connection belongs to: "+err.Error(), http.StatusForbidden)
		return
	}
	id, err := g.sessions.mint(user)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	g.sessions.revoke(old)
	http.SetCookie(w, &http.Cookie{Name: UISessionCookie(g.port), Value: id, Path: "/", MaxAge: int(UISessionLifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	u := *r.URL
	q := u.Query()
	q.Del(trust.LoginParam)
	u.RawQuery = q.Encode()
	if u.Path == "" {
		u.Path = "/"
	}
	target, err := json.Marshal(u.RequestURI()) // a JavaScript string; <, > and & escaped
	if err != nil {
		http.Error(w, "web UI login: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><title>intentq</title>` +
		`<script>location.replace(` + string(target) + `)</script>` +
		`<noscript><meta http-equiv="refresh" content="0;url=` + html.EscapeString(u.RequestURI()) + `"></noscript>` + "\n"))
}

// logout ends the session id and clears the cookie. It needs no other credential: holding the
// ID is what lets one end it, and SameSite=Strict keeps other sites' pages from sending it.
func (g *uiGuard) logout(w http.ResponseWriter, id string) {
	g.sessions.revoke(id)
	http.SetCookie(w, &http.Cookie{Name: UISessionCookie(g.port), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("logged out of intentq's Web UI: `starter ui` logs in again\n"))
}

func (g *uiGuard) isOpen(path string) bool {
	for _, p := range g.open {
		if path == p {
			return true
		}
	}
	return false
}

// refuse answers with code and closes the connection after the answer.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// cookieValue is the value of r's cookie name ("" when it has none).
func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

// withoutCookies returns r, or a copy of it without the cookies named, when it has them.
func withoutCookies(r *http.Request, names ...string) *http.Request {
	cookies := r.Cookies()
	keep := cookies[:0:0]
	for _, c := range cookies {
		drop := false
		for _, n := range names {
			drop = drop || c.Name == n
		}
		if !drop {
			keep = append(keep, c)
		}
	}
	if len(keep) == len(cookies) {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del("Cookie")
	for _, c := range keep {
		r.AddCookie(c)
	}
	return r
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

func refererAllowed(r *http.Request, port int) bool {
	ref := r.Header.Get("Referer")
	return ref != "" && trust.OriginAllowed(ref, port)
}
