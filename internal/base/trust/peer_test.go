package trust

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/otheruser"
)

// peerServer serves, on addr, a handler that answers with the local user of each connection as
// PeerUID finds it (the server set ConnContext, as intentq's listeners do).
func peerServer(t *testing.T, network, addr string) string {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("%s %s: %v", network, addr, err)
	}
	srv := &http.Server{ConnContext: ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, err := PeerUID(r, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("X-Uid", strconv.Itoa(uid))
		_, _ = fmt.Fprintf(w, "%d", uid)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// The kernel's socket tables tell whose process is at the far end of a loopback connection:
// this process's own user over IPv4 and IPv6, and (as root) another user's process as that user.
func TestLookupPeerUIDTellsTheLocalUser(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: the peer's user cannot be told on this system")
	}
	for _, tc := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}, {"tcp", ":0"}} {
		t.Run(tc.addr, func(t *testing.T) {
			addr := peerServer(t, tc.network, tc.addr)
			if strings.HasPrefix(addr, "[::]") {
				addr = "127.0.0.1:" + addr[strings.LastIndex(addr, ":")+1:] // IPv4 into a dual-stack listener
			}
			resp, err := http.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != strconv.Itoa(os.Getuid()) {
				t.Fatalf("this process's connection: %d %q, want uid %d", resp.StatusCode, body, os.Getuid())
			}
		})
	}
	t.Run("another user's process", func(t *testing.T) {
		addr := peerServer(t, "tcp4", "127.0.0.1:0")
		answer := otheruser.Request(t, addr, "GET / HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.HasSuffix(answer, "\r\n\r\n"+strconv.Itoa(otheruser.UID)) {
			t.Fatalf("the other user's connection: %q, want it told as uid %d", answer, otheruser.UID)
		}
	})
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	if _, err := LookupPeerUID(local, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}); err == nil || errors.Is(err, ErrPeerUnknown) {
		t.Errorf("a loopback peer with no socket: %v, want an error (not ErrPeerUnknown: this system can tell)", err)
	}
	if _, err := LookupPeerUID(local, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 2}); !errors.Is(err, ErrPeerUnknown) {
		t.Errorf("a peer on another machine: %v, want ErrPeerUnknown", err)
	}
}

// Issue 61, finding 7: the browser sends 127.0.0.1's cookies to every port, so another local
// user's server receives the codec's login cookie; replayed from that user's connection it
// opens nothing. The person's own connection keeps working, the token as a bearer header works
// from anyone (it is the credential itself), and where users cannot be told apart
// (ErrPeerUnknown) the cookie keeps its old rule.
func TestGuardCookieOnlyFromTheUsersOwnConnection(t *testing.T) {
	const tok = "t0k"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	peer := func(uid int, err error) PeerUIDFunc {
		return func(net.Addr, net.Addr) (int, error) { return uid, err }
	}
	cookie := &http.Cookie{Name: CookieName, Value: tok}
	for _, tc := range []struct {
		name   string
		peer   PeerUIDFunc
		cookie *http.Cookie
		bearer string
		want   int
	}{
		{"own user's cookie", peer(os.Getuid(), nil), cookie, "", http.StatusOK},
		{"another user's replay", peer(otheruser.UID, nil), cookie, "", http.StatusUnauthorized},
		{"another user's bearer", peer(otheruser.UID, nil), nil, tok, http.StatusOK},
		{"user not found", peer(0, errors.New("no socket")), cookie, "", http.StatusUnauthorized},
		{"cannot be told here", peer(0, ErrPeerUnknown), cookie, "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Guard{Port: 8787, Token: tok, Cookie: true, PeerUID: tc.peer}.Wrap(ok)
			r := httptest.NewRequest(http.MethodGet, "/codec/", nil)
			r.Host = "127.0.0.1:8787"
			if tc.cookie != nil {
				r.AddCookie(tc.cookie)
			}
			if tc.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%d, want %d", w.Code, tc.want)
			}
		})
	}
	t.Run("real connections", func(t *testing.T) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{ConnContext: ConnContext, Handler: Guard{Port: port, Token: tok, Cookie: true}.Wrap(ok)}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		addr := l.Addr().String()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/codec/", nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the person's own connection: %d, want 200", resp.StatusCode)
		}
		answer := otheruser.Request(t, addr, "GET /codec/ HTTP/1.1\r\nHost: "+addr+"\r\nCookie: "+CookieName+"="+tok+"\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(answer, "HTTP/1.1 401") {
			t.Fatalf("another user's replay of the cookie: %q, want 401", firstLine(answer))
		}
	})
}

// firstLine is the first line of an HTTP answer (its status).
func firstLine(answer string) string {
	line, _, _ := strings.Cut(answer, "\r\n")
	return line
}
