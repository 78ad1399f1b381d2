package tclient

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
)

// An API key implies TLS (Temporal Cloud), except on a loopback address with no TLS settings:
// another worker's embedded server, whose access token is the key.
func TestClientTLS(t *testing.T) {
	for _, c := range []struct {
		name    string
		t       config.Temporal
		wantTLS bool
	}{
		{"plain", config.Temporal{Address: "temporal:7233"}, false},
		{"api key, remote", config.Temporal{Address: "ns.tmprl.cloud:7233", APIKey: "k"}, true},
		{"api key, loopback", config.Temporal{Address: "127.0.0.1:7233", APIKey: "k"}, false},
		{"api key, loopback, tls on", config.Temporal{Address: "127.0.0.1:7233", APIKey: "k", TLS: config.TLS{Enabled: true}}, true},
	} {
		tc, err := clientTLS(c.t)
		if err != nil || (tc != nil) != c.wantTLS {
			t.Errorf("%s: TLS %v (%v), want %v", c.name, tc != nil, err, c.wantTLS)
		}
	}
}

// On the embedded server a client without the access token does not even try: the error says
// to start the worker (which creates it).
func TestDialEmbeddedNeedsTheToken(t *testing.T) {
	cfg := &config.Config{DataDir: t.TempDir(), Temporal: config.Temporal{Namespace: "default",
		Embedded: config.Embedded{IP: "127.0.0.1", Port: 1}, Encryption: config.Encryption{Mode: config.EncryptionOff}}}
	_, err := Dial(context.Background(), cfg, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "access token") || !strings.Contains(err.Error(), "start the worker") {
		t.Fatalf("Dial without a token: %v", err)
	}
}
