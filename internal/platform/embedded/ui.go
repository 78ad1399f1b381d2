package embedded

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uicsrf "github.com/temporalio/ui-server/v2/server/csrf"
	uiroute "github.com/temporalio/ui-server/v2/server/route"
	uiassets "github.com/temporalio/ui-server/v2/ui"
	"google.golang.org/grpc/metadata"
)

// CodecPath is where the Web UI's listener serves the payload codec (encryption on).
const CodecPath = "/codec"

// uiHandler is the Temporal Web UI (ui-server's routes and assets, assembled here as
// ui-server's own NewServer does, so that it is an http.Handler served in-process and never
// listens on a port of its own) behind intentq's boundary:
//
//   - uiGuard (session.go): the Host and Origin must be the loopback listener's own (DNS
//     rebinding: 403), and the request must carry a login session's cookie, which the login URL
//     (the access token, once) starts, or the access token as a bearer header (401 otherwise,
//     and the connection closes); the token is never a cookie, and a session opens nothing but
//     this listener;
//   - write actions are off: ui-server's DisableWriteActions, and intentq refuses every API call
//     but reads and queries itself (ui-server's own check only covers its routes);
//   - the browser's Authorization headers are dropped; the UI's gRPC calls to the frontend carry
//     the access token as metadata, added here (the browser never holds the frontend's token
//     in a header it could be tricked into sending elsewhere);
//   - the codec (when given) is served on the same origin, at CodecPath, behind the same guard.
type uiHandler struct {
	handler http.Handler
	close   func()
}

func newUIHandler(frontend string, port int, base, namespace, token string, codec http.Handler) (*uiHandler, error) {
	codecCfg := uiconfig.Codec{}
	if codec != nil {
		codecCfg = uiconfig.Codec{Endpoint: strings.TrimRight(base, "/") + CodecPath, IncludeCredentials: true}
	}
	provider, err := uiconfig.NewConfigProviderWithRefresh(&uiconfig.Config{
		Host:                "127.0.0.1",
		Port:                port,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		Codec:               codecCfg,
		DisableWriteActions: true,
		// Each of these is covered by DisableWriteActions; set too, so that the UI hides them.
		WorkflowTerminateDisabled: true,
		WorkflowCancelDisabled:    true,
		WorkflowSignalDisabled:    true,
		WorkflowUpdateDisabled:    true,
		WorkflowResetDisabled:     true,
		WorkflowPauseDisabled:     true,
		BatchActionsDisabled:      true,
		StartWorkflowDisabled:     true,
		ActivityCommandsDisabled:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("web UI config: %w", err)
	}
	cfg, _ := provider.GetConfig()

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(middleware.Secure())
	e.Use(uicsrf.EnsureTokenCookie(false))
	e.Use(middleware.CSRFWithConfig(uicsrf.MiddlewareConfig(provider, false)))
	e.Pre(uiroute.PublicPath(cfg.PublicPath))
	uiroute.SetHealthRoute(e)
	if err := uiroute.SetAPIRoutes(e, provider, []uiapi.Middleware{withFrontendToken(token)}); err != nil {
		provider.Close()
		return nil, fmt.Errorf("web UI: %w", err)
	}
	assets, err := uiassets.Assets()
	if err == nil {
		assets, err = fs.Sub(assets, "local")
	}
	if err != nil {
		provider.Close()
		return nil, fmt.Errorf("web UI assets: %w", err)
	}
	if err := uiroute.SetUIRoutes(e, cfg.PublicPath, assets, provider); err != nil {
		provider.Close()
		return nil, fmt.Errorf("web UI routes: %w", err)
	}
	uiroute.SetRenderRoute(e, "/")

	mux := http.NewServeMux()
	mux.Handle("/", readOnly(e))
	if codec != nil {
		mux.Handle(CodecPath+"/", codec)
	}
	guard := &uiGuard{port: port, token: token, sessions: newUISessions(), open: []string{"/healthz"}}
	return &uiHandler{handler: guard.Wrap(dropCredentials(mux)), close: provider.Close}, nil
}

// withFrontendToken adds the access token to the metadata of every gRPC call the UI's API
// makes to the frontend.
func withFrontendToken(token string) uiapi.Middleware {
	return func(echo.Context) runtime.ServeMuxOption {
		return runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD {
			return metadata.Pairs("authorization", "Bearer "+token)
		})
	}
}

// dropCredentials removes the headers grpc-gateway would forward to the frontend as
// credentials (the guard has checked the caller already).
func dropCredentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization")
		r.Header.Del("Authorization-Extras")
		next.ServeHTTP(w, r)
	})
}

// WriteActionsOff is the answer to an API call that would change something through the Web UI.
const WriteActionsOff = "write actions are off in intentq's Web UI: use starter (reply, close, ...) instead"

// readOnly lets through what reads: GET and HEAD, and the POST of a workflow query (queries
// change nothing); every other method on the API is refused with 405.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || !strings.HasPrefix(r.URL.Path, "/api/") || isQuery(r) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, WriteActionsOff, http.StatusMethodNotAllowed)
	})
}

func isQuery(r *http.Request) bool {
	// /api/v1/namespaces/{namespace}/workflows/{workflow_id}/query/{query_type}, segments as
	// escaped (a workflow id's slashes are %2F inside its segment), none of them . or ..
	seg := strings.Split(r.URL.EscapedPath(), "/")
	if r.Method != http.MethodPost || len(seg) != 9 || seg[0] != "" || seg[1] != "api" || seg[2] != "v1" ||
		seg[3] != "namespaces" || seg[5] != "workflows" || seg[7] != "query" {
		return false
	}
	for _, s := range seg[1:] {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}
