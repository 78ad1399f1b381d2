package embedded

import (
	"context"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/server/common/authorization"

	"github.com/intentq/intentq/internal/base/trust"
)

// TokenPrincipal is the principal type of a call that carried the access token.
const TokenPrincipal = "intentq-token"

// DeniedReason is the reason a call without the access token is refused with
// (PermissionDenied).
const DeniedReason = "intentq's embedded Temporal server needs the access token (data_dir/access.token) as `authorization: Bearer <token>`; intentq's own clients send it"

// ClaimMapper maps a call on the public frontend to admin claims when it carries the access
// token as `authorization: Bearer <token>` (what the Go SDK sends for
// client.NewAPIKeyStaticCredentials), and to no claims otherwise. The internal frontend, which
// only the server's own services reach (internode mTLS), uses Temporal's internal claim mapper
// instead: its callers are admins.
func ClaimMapper(token string) authorization.ClaimMapper { return tokenClaimMapper{token: token} }

type tokenClaimMapper struct{ token string }

func (m tokenClaimMapper) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if info != nil && trust.TokenEqual(trust.BearerToken(info.AuthToken), m.token) {
		return &authorization.Claims{Subject: "intentq", AuthType: TokenPrincipal, System: authorization.RoleAdmin}, nil
	}
	return nil, nil
}

// Authorizer allows health checks (gRPC health, GetSystemInfo: no data) to anyone and every
// other call only to admin claims: a call that carried the access token (ClaimMapper), or the
// server's own services on the internal frontend. Everything else is PermissionDenied.
func Authorizer() authorization.Authorizer { return tokenAuthorizer{} }

type tokenAuthorizer struct{}

func (tokenAuthorizer) Authorize(_ context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if authorization.IsHealthCheckAPI(target.APIName) {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	if claims != nil && claims.System&authorization.RoleAdmin != 0 {
		return authorization.Result{Decision: authorization.DecisionAllow,
			Principal: &commonpb.Principal{Type: claims.AuthType, Name: claims.Subject}}, nil
	}
	return authorization.Result{Decision: authorization.DecisionDeny, Reason: DeniedReason}, nil
}
