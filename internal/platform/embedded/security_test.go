package embedded_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/platform/embedded"
)

// TestBoundary plays a local attacker and a web page against the embedded server: the frontend
// refuses calls without the token, the internal services refuse anyone without the node
// certificate, and the Web UI and its codec answer only a logged-in browser on a loopback Host,
// read-only.
func TestBoundary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, line, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := encryption.ParseKeyring(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := options(t, dir, 24*time.Hour)
	opts.Codec = encryption.CodecHandler(keys.Strict(), nil)
	s, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	t.Run("frontend without the token", func(t *testing.T) {
		for name, creds := range map[string]client.Credentials{"none": nil, "wrong": client.NewAPIKeyStaticCredentials("not-the-token")} {
			c, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: "default", Credentials: creds,
				ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "evil/" + name, TaskQueue: taskQueue}, "Anything")
			c.Close()
			var denied *serviceerror.PermissionDenied
			if !errors.As(err, &denied) {
				t.Errorf("%s: start = %v, want PermissionDenied", name, err)
			}
		}
		c := dial(t, s)
		defer c.Close()
		if _, err := c.DescribeWorkflowExecution(ctx, "evil/none", ""); !isNotFound(err) {
			t.Errorf("with the token: describe = %v, want not found", err)
		}
	})

	t.Run("internal services need the node certificate", func(t *testing.T) {
		certs := filepath.Join(dir, embedded.TLSDir)
		info, err := os.Stat(certs)
		if err != nil || info.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a 0700 folder", certs, info.Mode(), err)
		}
		if err := trust.CheckPrivate(filepath.Join(certs, "node.key")); err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "node.pem"), filepath.Join(certs, "node.key"))
		if err != nil {
			t.Fatal(err)
		}
		caPEM, _ := os.ReadFile(filepath.Join(certs, "ca.pem"))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		if len(s.InternalAddresses()) != 4 {
			t.Fatalf("internal addresses %v", s.InternalAddresses())
		}
		for name, addr := range s.InternalAddresses() {
			check := func(creds credentials.TransportCredentials) error {
				conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
				if err != nil {
					return err
				}
				defer conn.Close()
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				_, err = healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
				if status.Code(err) == codes.Unimplemented || status.Code(err) == codes.NotFound {
					return nil // reached the service
				}
				return err
			}
			if err := check(insecure.NewCredentials()); err == nil {
				t.Errorf("%s %s: a plain connection was served", name, addr)
			}
			if err := check(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})); err == nil { //nolint:gosec // the attacker's view
				t.Errorf("%s %s: TLS without a client certificate was served", name, addr)
			}
			if err := check(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: embedded.InternodeServerName})); err != nil {
				t.Errorf("%s %s: with the node certificate: %v", name, addr, err)
			}
		}
	})

	ui := s.UIURL()
	port := ui[strings.LastIndex(ui, ":")+1:]
	uiPort, _ := strconv.Atoi(port)
	var session string // the browser's session ID, once it has logged in
	do := func(method, path, host, body string, h map[string]string, c *http.Client) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ui+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		if c == nil {
			c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	list := "/api/v1/namespaces/default/workflows"
	start := "/api/v1/namespaces/default/workflows/evil%2Fui/signal-with-start/prompt"

	t.Run("web UI", func(t *testing.T) {
		bearer := map[string]string{"Authorization": "Bearer " + testToken}
		if code, _ := do("GET", list, "rebind.attacker.example:"+port, "", bearer, nil); code != http.StatusForbidden {
			t.Errorf("rebinding Host: %d, want 403", code)
		}
		if code, _ := do("GET", list, "", "", map[string]string{"Authorization": "Bearer nope"}, nil); code != http.StatusUnauthorized {
			t.Errorf("no login: %d, want 401", code)
		}
		if code, _ := do("GET", "/namespaces/default/workflows", "", "", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("page without login: %d, want 401", code)
		}
		if code, _ := do("GET", "/healthz", "", "", nil, nil); code != http.StatusOK {
			t.Errorf("health: %d", code)
		}
		// The token as a cookie opens nothing (issue 33): browsers send 127.0.0.1's cookies to
		// every port, so the UI never takes the token from one.
		for _, name := range []string{trust.CookieName, embedded.UISessionCookie(uiPort)} {
			if code, _ := do("GET", list, "", "", map[string]string{"Cookie": name + "=" + testToken}, nil); code != http.StatusUnauthorized {
				t.Errorf("the token as cookie %s: %d, want 401", name, code)
			}
		}
		// The login URL starts a session whose ID is the cookie; the browser is then in, through
		// the UI's own API (its gRPC calls carry the token).
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		if code, _ := do("GET", "/?token="+testToken, "", "", nil, browser); code != http.StatusOK {
			t.Fatalf("login URL: %d", code)
		}
		u, _ := url.Parse(ui)
		cookies := jar.Cookies(u)
		if len(cookies) == 0 {
			t.Fatal("the login URL set no cookie")
		}
		for _, c := range cookies {
			if strings.Contains(c.Value, testToken) {
				t.Fatalf("cookie %s holds the token", c.Name)
			}
			if c.Name == embedded.UISessionCookie(uiPort) {
				session = c.Value
			}
		}
		if session == "" {
			t.Fatalf("no session cookie among %v", cookies)
		}
		if code, body := do("GET", list, "", "", nil, browser); code != http.StatusOK {
			t.Fatalf("list after login: %d %s", code, body)
		}
		// Write actions are off, with the cookie and the right Origin too.
		sws := `{"workflowType":{"name":"Headless"},"taskQueue":{"name":"intentq"}}`
		code, body := do("POST", start, "", sws, map[string]string{"Origin": ui, "Content-Type": "application/json"}, browser)
		if code != http.StatusMethodNotAllowed || !strings.Contains(body, "write actions are off") {
			t.Errorf("signal-with-start with the cookie: %d %s", code, body)
		}
		if code, _ := do("POST", start, "", sws, map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, browser); code != http.StatusForbidden {
			t.Errorf("cross-origin POST: %d, want 403", code)
		}
		c := dial(t, s)
		defer c.Close()
		if _, err := c.DescribeWorkflowExecution(ctx, "evil/ui", ""); !isNotFound(err) {
			t.Errorf("describe evil/ui = %v, want not found", err)
		}
		// The session opens the UI only: the frontend refuses it as a credential.
		evil, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: "default", Credentials: client.NewAPIKeyStaticCredentials(session),
			ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = evil.DescribeWorkflowExecution(ctx, "evil/ui", "")
		evil.Close()
		var denied *serviceerror.PermissionDenied
		if !errors.As(err, &denied) {
			t.Errorf("the frontend with the session ID: %v, want PermissionDenied", err)
		}
	})

	t.Run("codec", func(t *testing.T) {
		plain, _ := converter.GetDefaultDataConverter().ToPayload("forged")
		enc, err := keys.Encode([]*commonpb.Payload{plain})
		if err != nil {
			t.Fatal(err)
		}
		body := func(p *commonpb.Payload) string {
			b, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
			return string(b)
		}
		ct := map[string]string{"Content-Type": "application/json"}
		if code, _ := do("POST", embedded.CodecPath+"/decode", "", body(enc[0]), ct, nil); code != http.StatusUnauthorized {
			t.Errorf("decode without the token: %d, want 401", code)
		}
		auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + testToken}
		code, out := do("POST", embedded.CodecPath+"/decode", "", body(enc[0]), auth, nil)
		var got commonpb.Payloads
		if code != http.StatusOK || protojson.Unmarshal([]byte(out), &got) != nil || len(got.Payloads) != 1 || !strings.Contains(string(got.Payloads[0].Data), "forged") {
			t.Errorf("decode with the token: %d %s", code, out)
		}
		if code, out := do("POST", embedded.CodecPath+"/decode", "", body(plain), auth, nil); code != http.StatusBadRequest || !strings.Contains(out, "not encrypted") {
			t.Errorf("decode of a plain payload: %d %s, want 400 not encrypted", code, out)
		}
		// The browser's session reaches the codec on the UI's origin (the UI decodes there).
		sessionCT := map[string]string{"Content-Type": "application/json", "Origin": ui, "Cookie": embedded.UISessionCookie(uiPort) + "=" + session}
		if code, out := do("POST", embedded.CodecPath+"/decode", "", body(enc[0]), sessionCT, nil); code != http.StatusOK || !strings.Contains(out, "payloads") {
			t.Errorf("decode with the session: %d %s", code, out)
		}
		var settings struct{ Codec struct{ Endpoint string } }
		_, sb := do("GET", "/api/v1/settings", "", "", map[string]string{"Authorization": "Bearer " + testToken}, nil)
		if err := json.Unmarshal([]byte(sb), &settings); err != nil || settings.Codec.Endpoint != ui+embedded.CodecPath {
			t.Errorf("UI settings codec %q (%v), want %s", settings.Codec.Endpoint, err, ui+embedded.CodecPath)
		}
	})

	t.Run("logout", func(t *testing.T) {
		cookie := map[string]string{"Cookie": embedded.UISessionCookie(uiPort) + "=" + session}
		if code, _ := do("GET", list, "", "", cookie, nil); code != http.StatusOK {
			t.Fatalf("list with the session: %d", code)
		}
		if code, _ := do("POST", embedded.UILogoutPath, "", "", cookie, nil); code != http.StatusOK {
			t.Fatalf("logout: %d", code)
		}
		if code, _ := do("GET", list, "", "", cookie, nil); code != http.StatusUnauthorized {
			t.Errorf("list after logout: %d, want 401", code)
		}
	})
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
