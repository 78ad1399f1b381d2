package trust

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// CookieName is the cookie the Web UI's login sets (as Jupyter does: a token in the first URL,
// then a cookie).
const CookieName = "intentq_token"

// LoginParam is the query parameter of the login URL that `ready` and `starter ui` print.
const LoginParam = "token"

// LocalHosts are the host names a loopback listener answers to. Any other Host header is a web
// page whose own name re-resolved to 127.0.0.1 (DNS rebinding), or a request meant for another
// server: refused.
var LocalHosts = []string{"127.0.0.1", "localhost", "::1"}

// HostAllowed reports whether a request's Host header (host or host:port) names a loopback host
// and, when port is above 0, that port. A missing port is allowed only for port 80.
func HostAllowed(hostHeader string, port int) bool {
	host, p, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, p = strings.Trim(hostHeader, "[]"), "80"
	}
	if port > 0 && p != strconv.Itoa(port) {
		return false
	}
	for _, h := range LocalHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether an Origin (or Referer) header is absent, or names http(s) on a
// loopback host and port (the page was served by this listener, not by another site).
func OriginAllowed(origin string, port int) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return HostAllowed(u.Host, port)
}

// Guard is the check every intentq HTTP listener runs before its handlers: the Host and Origin
// allowlist (DNS rebinding), then the credential. A handler behind a Guard can assume the request
// comes from the person (or a program holding their token).
type Guard struct {
	// Port is the listener's port: the Host header must carry it.
	Port int
	// Token is the credential: "Authorization: Bearer <Token>", or the login cookie. Empty
	// refuses every request that needs a credential.
	Token string
	// Cookie lets the browser log in: ?token=<Token> on a GET sets the cookie and redirects to the
	// same URL without the token; later requests carry the cookie.
	Cookie bool
	// Open are paths served without a credential (still behind the Host check): health checks.
	Open []string
	// Origins are further origins allowed to call (a Web UI on another port calling a codec,
	// with CORS); they still need the credential.
	Origins []string
	// AnyHost skips the Host check: a listener meant for other machines (ingest.allow_remote),
	// whose callers name it by any address. The credential is still required.
	AnyHost bool
	// PeerUID finds the local user at the far end of a request's connection (nil:
	// LookupPeerUID): the cookie counts only from a connection of this process's own user,
	// since the browser sends it to every port of 127.0.0.1, other users' servers included.
	// Serve with ConnContext to look it up once per connection.
	PeerUID PeerUIDFunc
}

// originAllowed reports whether origin is absent, the listener's own, or one of g.Origins.
func (g Guard) originAllowed(origin string) bool {
	if OriginAllowed(origin, g.Port) {
		return true
	}
	for _, o := range g.Origins {
		if origin == strings.TrimRight(o, "/") {
			return true
		}
	}
	return false
}

// Wrap returns next behind the guard. Refusals are 403 for a foreign Host or Origin and 401 for a
// missing or wrong credential; neither says which token was expected.
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.AnyHost && !HostAllowed(r.Host, g.Port) {
			http.Error(w, "forbidden: this server answers only to its loopback address (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		if !g.originAllowed(r.Header.Get("Origin")) {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
		for _, p := range g.Open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		if g.Cookie && r.Method == http.MethodGet {
			if tok := r.URL.Query().Get(LoginParam); tok != "" {
				g.login(w, r, tok)
				return
			}
		}
		if !g.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="intentq"`)
			http.Error(w, "unauthorized: open the URL the worker's `ready` line or `starter ui` prints", http.StatusUnauthorized)
			return
		}
		// A cookie is sent by the browser on its own: an unsafe method authorised only by the
		// cookie must come from this origin (the browser sets Origin on cross-site POSTs; a
		// form or fetch from another site is refused above, and one without Origin here).
		if unsafeMethod(r.Method) && BearerToken(r.Header.Get("Authorization")) == "" && r.Header.Get("Origin") == "" && !sameOriginReferer(r, g.Port) {
			http.Error(w, "forbidden: a state-changing request needs an Origin header", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries the token, as a bearer header or as the login cookie; the
// cookie only on a connection of this process's own local user (where that can be told).
func (g Guard) Authorized(r *http.Request) bool {
	if TokenEqual(BearerToken(r.Header.Get("Authorization")), g.Token) {
		return true
	}
	if g.Cookie {
		if c, err := r.Cookie(CookieName); err == nil && TokenEqual(c.Value, g.Token) && PeerIsUser(r, os.Getuid(), g.PeerUID) {
			return true
		}
	}
	return false
}

// login sets the cookie when tok is right and redirects to the URL without it.
func (g Guard) login(w http.ResponseWriter, r *http.Request, tok string) {
	if !TokenEqual(tok, g.Token) {
		http.Error(w, "unauthorized: wrong token", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: g.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	u := *r.URL
	q := u.Query()
	q.Del(LoginParam)
	u.RawQuery = q.Encode()
	if u.Path == "" {
		u.Path = "/"
	}
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

func sameOriginReferer(r *http.Request, port int) bool {
	ref := r.Header.Get("Referer")
	return ref != "" && OriginAllowed(ref, port)
}

// LoginURL is the URL that logs a browser into the listener at base (http://127.0.0.1:8233).
func LoginURL(base, token string) string {
	return strings.TrimRight(base, "/") + "/?" + LoginParam + "=" + url.QueryEscape(token)
}

// LoopbackIP reports whether ip (a listener's bind address) is a loopback address.
func LoopbackIP(ip string) bool {
	if strings.EqualFold(ip, "localhost") {
		return true
	}
	parsed := net.ParseIP(strings.Trim(ip, "[]"))
	return parsed != nil && parsed.IsLoopback()
}
