package trust

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureTokenCreatesPrivateTokenOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", TokenFile)
	a, err := EnsureToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2*tokenBytes {
		t.Fatalf("token %q: want %d hex characters", a, 2*tokenBytes)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v (%v), want 0600", info.Mode(), err)
	}
	b, err := EnsureToken(path)
	if err != nil || b != a {
		t.Fatalf("second EnsureToken = %q, %v; want the same token", b, err)
	}
}

func TestReadSecretFileRefusesReadableByOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadSecretFile(path)
	if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("ReadSecretFile of a 0644 file = %v, want ErrNotPrivate naming chmod 600", err)
	}
	if _, err := EnsureToken(path); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("EnsureToken of a 0644 file = %v, want ErrNotPrivate", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadSecretFile(path); err != nil || v != "s3cret" {
		t.Fatalf("ReadSecretFile = %q, %v", v, err)
	}
}

func TestGuard(t *testing.T) {
	const tok = "t0k"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	h := Guard{Port: 8233, Token: tok, Cookie: true, Open: []string{"/healthz"}}.Wrap(ok)
	cases := []struct {
		name, method, target, host, origin, auth, cookie string
		want                                             int
	}{
		{"bearer", "GET", "/api", "127.0.0.1:8233", "", "Bearer t0k", "", 200},
		{"cookie", "GET", "/api", "localhost:8233", "", "", tok, 200},
		{"no credential", "GET", "/api", "127.0.0.1:8233", "", "", "", 401},
		{"wrong bearer", "GET", "/api", "127.0.0.1:8233", "", "Bearer nope", "", 401},
		{"any Authorization is not a credential", "POST", "/api", "127.0.0.1:8233", "", "Basic eDp5", "", 401},
		{"rebinding host", "GET", "/api", "evil.example:8233", "", "Bearer t0k", "", 403},
		{"wrong port", "GET", "/api", "127.0.0.1:9999", "", "Bearer t0k", "", 403},
		{"foreign origin", "POST", "/api", "127.0.0.1:8233", "http://evil.example", "", tok, 403},
		{"cookie POST without origin", "POST", "/api", "127.0.0.1:8233", "", "", tok, 403},
		{"cookie POST same origin", "POST", "/api", "127.0.0.1:8233", "http://127.0.0.1:8233", "", tok, 200},
		{"health open", "GET", "/healthz", "127.0.0.1:8233", "", "", "", 200},
		{"health still host-checked", "GET", "/healthz", "evil.example:8233", "", "", "", 403},
		{"login wrong", "GET", "/?token=bad", "127.0.0.1:8233", "", "", "", 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.target, nil)
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			if c.cookie != "" {
				r.AddCookie(&http.Cookie{Name: CookieName, Value: c.cookie})
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d (%s)", w.Code, c.want, w.Body.String())
			}
		})
	}
	t.Run("login sets the cookie and drops the token from the URL", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/namespaces/default?token=t0k&x=1", nil)
		r.Host = "127.0.0.1:8233"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/namespaces/default?x=1" {
			t.Fatalf("login: %d to %q", w.Code, w.Header().Get("Location"))
		}
		c := w.Result().Cookies()
		if len(c) != 1 || c[0].Name != CookieName || c[0].Value != tok || !c[0].HttpOnly {
			t.Fatalf("login cookie %+v", c)
		}
	})
}

func TestLoopbackIP(t *testing.T) {
	for ip, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "0.0.0.0": false, "192.168.1.2": false, "": false} {
		if got := LoopbackIP(ip); got != want {
			t.Errorf("LoopbackIP(%q) = %v, want %v", ip, got, want)
		}
	}
}
