// Package tclient dials Temporal with intentq's configuration (embedded or external, TLS and API
// keys for Temporal Cloud) and prepares the namespace intentq runs in.
package tclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/base/trust"
)

// Dial connects to the cluster the configuration names (the embedded server's address when no
// external one is set) and checks that it answers. Options adjust the client (e.g. metrics).
//
// On the embedded server every call carries the access token (data_dir/access.token, which the
// worker creates at its first start) as `authorization: Bearer <token>`, over plain gRPC on
// loopback. An external cluster keeps its own mechanisms: mTLS (temporal.tls.*) or an API key
// (temporal.api_key, sent the same way; TLS implied except on a loopback address).
//
// With encryption on, the client encrypts every payload and refuses to decode one that is not
// encrypted (encryption.Strict) unless temporal.encryption.accept_plain is set.
func Dial(ctx context.Context, cfg *config.Config, logger *zap.Logger, options ...func(*client.Options)) (client.Client, error) {
	opts := client.Options{
		HostPort:  cfg.TemporalAddress(),
		Namespace: cfg.Temporal.Namespace,
		Logger:    NewSDKLogger(logger),
	}
	if cfg.EncryptionOn() {
		k, err := Keyring(cfg)
		if err != nil {
			return nil, err
		}
		// What intentq decodes outside the SDK (search attributes, which Temporal keeps
		// unencrypted; memos) passes plain payloads through.
		setPayloads(encryption.DataConverter(k))
		opts.DataConverter = encryption.StrictDataConverter(k)
		if cfg.Temporal.Encryption.AcceptPlain {
			opts.DataConverter = encryption.DataConverter(k)
		}
	} else {
		setPayloads(nil)
	}
	for _, o := range options {
		o(&opts)
	}
	if cfg.EmbeddedServer() {
		tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
		if err != nil {
			return nil, fmt.Errorf("the embedded Temporal server needs the access token: %w", err)
		}
		opts.Credentials = client.NewAPIKeyStaticCredentials(tok)
		opts.ConnectionOptions.TLSDisabled = true
	} else {
		tlsCfg, err := clientTLS(cfg.Temporal)
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tlsCfg
		if cfg.Temporal.APIKey.IsSet() {
			opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.Temporal.APIKey.Reveal())
			// The SDK turns TLS on for an API key unless told not to (clientTLS decided).
			opts.ConnectionOptions.TLSDisabled = tlsCfg == nil
		}
	}
	if loopbackAddress(opts.HostPort) {
		// gzip on loopback only costs CPU: compressing and decompressing every call took 5 % of
		// the worker's (and its embedded server's) CPU in the 50-session burst (issue 38).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (temporal.address): %w", opts.HostPort, err)
	}
	return c, nil
}

// Keyring loads the encryption keys: temporal.encryption.key when set, else the key file.
func Keyring(cfg *config.Config) (*encryption.Keyring, error) {
	if cfg.Temporal.Encryption.Key.IsSet() {
		k, err := encryption.ParseKeyring(strings.NewReader(cfg.Temporal.Encryption.Key.Reveal()))
		if err != nil {
			return nil, fmt.Errorf("temporal.encryption.key: %w", err)
		}
		return k, nil
	}
	return encryption.LoadKeyring(cfg.EncryptionKeyFile())
}

// payloads is the data converter of this process's clients (nil: the SDK's default).
var (
	payloadsMu sync.Mutex
	payloads   converter.DataConverter
)

func setPayloads(dc converter.DataConverter) {
	payloadsMu.Lock()
	defer payloadsMu.Unlock()
	payloads = dc
}

// Payloads is the data converter this process's clients use: what decodes payloads read
// outside the SDK (memos in list results, a workflow's input from its history), encrypted or not.
func Payloads() converter.DataConverter {
	payloadsMu.Lock()
	defer payloadsMu.Unlock()
	if payloads != nil {
		return payloads
	}
	return converter.GetDefaultDataConverter()
}

// clientTLS builds the TLS config for an external frontend; nil when TLS is off. An API key
// implies TLS, as Temporal Cloud requires it, except on a loopback address with no
// temporal.tls.* set: another intentq worker's embedded server, whose access token is the key
// (`temporal.api_key_file: ~/.intentq/access.token`).
func clientTLS(t config.Temporal) (*tls.Config, error) {
	if !t.TLS.Enabled && t.TLS.CertFile == "" && t.TLS.CAFile == "" && (!t.APIKey.IsSet() || loopbackAddress(t.Address)) {
		return nil, nil
	}
	tc := &tls.Config{ServerName: t.TLS.ServerName, MinVersion: tls.VersionTLS12}
	if t.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.TLS.CertFile, t.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.cert_file/key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.TLS.CAFile != "" {
		pem, err := os.ReadFile(t.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal.tls.ca_file: %s holds no PEM certificate", t.TLS.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func loopbackAddress(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	return err == nil && trust.LoopbackIP(host)
}

// NamespaceSpec is what intentq needs of its namespace.
type NamespaceSpec struct {
	Name string
	// Retention, when not zero, is enforced (embedded server); zero leaves the cluster's value.
	Retention time.Duration
	// SearchAttributes that must exist; missing ones are added.
	SearchAttributes map[string]enumspb.IndexedValueType
}

// NamespaceReadyTimeout bounds the wait for a newly registered namespace to be served.
const NamespaceReadyTimeout = time.Minute

// EnsureNamespace registers the namespace when missing, sets its retention when asked and adds
// missing custom search attributes. It is safe to call on every start.
func EnsureNamespace(ctx context.Context, c client.Client, spec NamespaceSpec) error {
	ns := c.WorkflowService()
	desc, err := ns.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: spec.Name})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case errors.As(err, &notFound):
		retention := spec.Retention
		if retention == 0 {
			retention = 30 * 24 * time.Hour
		}
		_, err = ns.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        spec.Name,
			WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		if err != nil {
			return fmt.Errorf("namespace %q does not exist and could not be registered: %w", spec.Name, err)
		}
	case err != nil:
		return fmt.Errorf("describe namespace %q: %w", spec.Name, err)
	case spec.Retention != 0 && desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != spec.Retention:
		_, err = ns.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
			Namespace: spec.Name,
			Config: &namespacepb.NamespaceConfig{
				WorkflowExecutionRetentionTtl: durationpb.New(spec.Retention),
			},
		})
		if err != nil {
			return fmt.Errorf("set retention of namespace %q to %s: %w", spec.Name, spec.Retention, err)
		}
	}
	return ensureSearchAttributes(ctx, c, spec)
}

func ensureSearchAttributes(ctx context.Context, c client.Client, spec NamespaceSpec) error {
	// A namespace just registered reaches every service of a cluster within its namespace cache
	// refresh (about 10 s): until then it is "not found".
	var missing []string
	var err error
	for deadline := time.Now().Add(NamespaceReadyTimeout); ; {
		missing, err = MissingSearchAttributes(ctx, c, spec.Name, spec.SearchAttributes)
		var notFound *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &notFound) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil || len(missing) == 0 {
		return err
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		add[name] = spec.SearchAttributes[name]
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        spec.Name,
		SearchAttributes: add,
	})
	if err != nil {
		return fmt.Errorf("add search attributes %v to namespace %q: %w", missing, spec.Name, err)
	}
	return nil
}

// MissingSearchAttributes returns, sorted, the names in want that the namespace lacks.
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string, want map[string]enumspb.IndexedValueType) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of namespace %q: %w", namespace, err)
	}
	var missing []string
	for name := range want {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// Refusal reduces a workflow's refusal (an application error from an update or query handler)
// to its message, so a person reads "intent ... is already closed" rather than the SDK's wrapping.
func Refusal(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return errors.New(appErr.Message())
	}
	return err
}
