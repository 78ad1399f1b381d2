package embedded

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.temporal.io/server/common/authorization"
)

// The claim mapper and authorizer: the token is admin, a wrong token or none is nothing and is
// denied; the internal frontend's callers (Temporal's internal claim mapper) are admins; health
// checks are open.
func TestAuthorizer(t *testing.T) {
	const tok = "s3cret-token"
	cm, az := ClaimMapper(tok), Authorizer()
	start := &authorization.CallTarget{APIName: "/temporal.api.workflowservice.v1.WorkflowService/SignalWithStartWorkflowExecution", Namespace: "default"}
	cases := []struct {
		name   string
		header string
		want   authorization.Decision
	}{
		{"token", "Bearer " + tok, authorization.DecisionAllow},
		{"token, other case of the scheme", "bearer " + tok, authorization.DecisionAllow},
		{"wrong token", "Bearer nope", authorization.DecisionDeny},
		{"token without the scheme", tok, authorization.DecisionDeny},
		{"none", "", authorization.DecisionDeny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var claims *authorization.Claims
			if c.header != "" {
				var err error
				if claims, err = cm.GetClaims(&authorization.AuthInfo{AuthToken: c.header}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := az.Authorize(context.Background(), claims, start)
			if err != nil || res.Decision != c.want {
				t.Fatalf("decision %v, %v; want %v", res.Decision, err, c.want)
			}
			if c.want == authorization.DecisionDeny && res.Reason != DeniedReason {
				t.Errorf("reason %q", res.Reason)
			}
		})
	}
	internal, _ := authorization.NewInternalClaimMapper().GetClaims(&authorization.AuthInfo{})
	if res, _ := az.Authorize(context.Background(), internal, start); res.Decision != authorization.DecisionAllow {
		t.Error("the internal frontend's callers are denied")
	}
	health := &authorization.CallTarget{APIName: "/grpc.health.v1.Health/Check"}
	if res, _ := az.Authorize(context.Background(), nil, health); res.Decision != authorization.DecisionAllow {
		t.Error("health check denied")
	}
	if c, _ := ClaimMapper("").GetClaims(&authorization.AuthInfo{AuthToken: "Bearer "}); c != nil {
		t.Error("an empty token matched an empty configured token")
	}
}

func TestReadOnly(t *testing.T) {
	h := readOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/api/v1/namespaces/default/workflows", 200},
		{"POST", "/api/v1/namespaces/default/workflows/intent%2F1%2F2/query/__stack_trace", 200},
		{"POST", "/api/v1/namespaces/default/workflows/session%2Fx/signal-with-start/prompt", 405},
		{"POST", "/api/v1/namespaces/default/workflows/a/query/../signal/x", 405},
		{"POST", "/api/v1/namespaces/default/workflows/a/terminate", 405},
		{"DELETE", "/api/v1/namespaces/default", 405},
		{"POST", "/api/v1/namespaces/default/batch-operations/x", 405},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, w.Code, c.want)
		}
	}
}
