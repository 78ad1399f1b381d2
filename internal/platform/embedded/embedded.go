// Package embedded runs a real Temporal server in-process on a SQLite file, with the Temporal
// Web UI, both on loopback: the default deployment of intentq, which needs nothing installed.
//
// Loopback is not a boundary (other users of the machine, web pages through DNS rebinding), so:
// the gRPC frontend admits only calls carrying the access token (ClaimMapper, Authorizer); the
// server's internal services (internal frontend, history, matching, worker) speak mTLS with a
// CA of their own in data_dir/tls, so a local process cannot call them; and the Web UI is
// served in-process behind its login sessions (uiGuard, on trust's Host check), read-only (see
// ui.go).
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	serverconfig "go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/intentq/intentq/internal/base/instance"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/platform/embedded/sqliteplugin"
)

// DBFile is the SQLite database's name inside the data directory.
const DBFile = "temporal.db"

const clusterName = "active"

// Options configures the embedded server.
type Options struct {
	// DataDir holds the SQLite database and the internode certificates (TLSDir), and the
	// claims on internal ports when this user has no private runtime folder (freePorts); it is
	// created when missing.
	DataDir string
	// IP is the address the gRPC frontend binds to (loopback by default). The Web UI always
	// binds to loopback (it answers only to loopback host names).
	IP string
	// Port is the gRPC frontend port; UIPort the Web UI's (0: no UI).
	Port, UIPort int
	// Namespace is created on first start, with Retention and SearchAttributes.
	Namespace        string
	Retention        time.Duration
	SearchAttributes map[string]enumspb.IndexedValueType
	// Token is the access token (trust.EnsureToken): the frontend admits only calls that carry
	// it, and the Web UI only browsers logged in with it. Required.
	Token string
	// Codec is the payload codec the Web UI decrypts with (encryption on), served on the UI's
	// own origin at CodecPath behind the UI's guard; nil: none.
	Codec http.Handler
	// Logger receives the server's own logs, already restricted to the wanted level.
	Logger *zap.Logger
}

// Server is a running embedded Temporal server and Web UI.
type Server struct {
	server   temporal.Server
	ui       *http.Server
	uiClose  func()
	uiDone   chan struct{}
	frontend string
	uiAddr   string
	internal map[string]string
	stopping *atomic.Bool
}

// PortInUseError says which configured port is taken, and by which key it is set.
type PortInUseError struct {
	Addr string
	Key  string
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("%s is already in use (%s): stop what listens there or set %s / INTENTQ_%s to a free port: %v",
		e.Addr, e.Key, e.Key, envName(e.Key), e.Err)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// Start checks the ports, creates the database and namespace when they are new, and starts the
// server and the UI. It returns once the frontend answers and the UI serves HTTP.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Token == "" {
		return nil, errors.New("embedded temporal: no access token")
	}
	frontend := net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port))
	if err := checkFree(frontend, "temporal.embedded.port"); err != nil {
		return nil, err
	}
	var uiAddr string
	var uiListener net.Listener
	if opts.UIPort != 0 {
		uiAddr = net.JoinHostPort(uiIP(opts.IP), strconv.Itoa(opts.UIPort))
		l, err := net.Listen("tcp", uiAddr)
		if err != nil {
			return nil, &PortInUseError{Addr: uiAddr, Key: "temporal.embedded.ui_port", Err: err}
		}
		uiListener = l
		defer func() {
			if uiListener != nil {
				_ = uiListener.Close()
			}
		}()
	}

	stopping := new(atomic.Bool)
	opts.Logger = quietLogger(opts.Logger, stopping)
	dbs, err := prepareDatabase(opts)
	if err != nil {
		return nil, err
	}
	serverOpts, internal, release, err := serverOptions(opts, dbs)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		release()
		return nil, fmt.Errorf("embedded temporal: build server: %w", err)
	}
	err = srv.Start()
	release() // bound now (or never): no other server's pick can take them
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: start server on %s: %w", frontend, err)
	}
	if err := addSearchAttributes(ctx, opts, frontend); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	s := &Server{server: srv, frontend: frontend, internal: internal, stopping: stopping}

	if uiListener != nil {
		s.uiAddr = uiAddr
		h, err := newUIHandler(net.JoinHostPort(loopbackFor(opts.IP), strconv.Itoa(opts.Port)), opts.UIPort, s.UIURL(), opts.Namespace, opts.Token, opts.Codec)
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
		s.uiClose = h.close
		s.ui = newUIServer(h.handler, opts.Logger.Named("ui"), defaultUITimeouts)
		s.uiDone = make(chan struct{})
		l := uiListener
		uiListener = nil
		go func() {
			defer close(s.uiDone)
			_ = s.ui.Serve(l)
		}()
		if err := waitHTTP(ctx, "http://"+uiAddr+"/healthz"); err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("embedded temporal: web UI on %s: %w", uiAddr, err)
		}
	}
	return s, nil
}

// uiTimeouts are the Web UI listener's limits, so that no connection is held open without a
// credential or by a client too slow to finish its request (issue 33).
type uiTimeouts struct {
	// readHeader: a request's headers must arrive within it (a silent new connection closes).
	readHeader time.Duration
	// read bounds reading a whole request, its body included (a codec call carries a page of
	// payloads; on loopback that takes milliseconds).
	read time.Duration
	// write bounds a response, from the end of the request's headers. The UI's longest call is a
	// history long poll (waitNewEvent), which the frontend answers within 20 s
	// (history.longPollExpirationInterval, left at Temporal's default): a minute fits it.
	write time.Duration
	// idle closes a kept-alive connection that sends no further request.
	idle time.Duration
}

// defaultUITimeouts are the Web UI listener's limits.
var defaultUITimeouts = uiTimeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: time.Minute, idle: time.Minute}

// uiMaxHeaderBytes bounds a request's headers (the UI's own cookies and queries are a few KB).
const uiMaxHeaderBytes = 64 << 10

// newUIServer is the Web UI's http.Server: handler behind the limits of t, each connection's
// local user looked up once (trust.ConnContext: a login session counts only on its user's
// connections).
func newUIServer(handler http.Handler, logger *zap.Logger, t uiTimeouts) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read, WriteTimeout: t.write,
		IdleTimeout: t.idle, MaxHeaderBytes: uiMaxHeaderBytes, ErrorLog: zap.NewStdLog(logger), ConnContext: trust.ConnContext}
}

// addSearchAttributes registers the search attributes an existing namespace lacks (a data_dir
// from an older intentq; a new namespace got them all in prepareDatabase).
func addSearchAttributes(ctx context.Context, opts Options, frontend string) error {
	if len(opts.SearchAttributes) == 0 {
		return nil
	}
	c, err := client.Dial(client.Options{HostPort: frontend, Namespace: opts.Namespace, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		Credentials: client.NewAPIKeyStaticCredentials(opts.Token), ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
	if err != nil {
		return fmt.Errorf("embedded temporal: dial %s: %w", frontend, err)
	}
	defer c.Close()
	missing, err := tclient.MissingSearchAttributes(ctx, c, opts.Namespace, opts.SearchAttributes)
	if err != nil || len(missing) == 0 {
		return err
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		add[name] = opts.SearchAttributes[name]
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: opts.Namespace, SearchAttributes: add}); err != nil {
		return fmt.Errorf("embedded temporal: add search attributes %v: %w", missing, err)
	}
	opts.Logger.Info("search attributes added to an existing namespace", zap.Strings("added", missing))
	return nil
}

// FrontendAddress is the gRPC address clients dial.
func (s *Server) FrontendAddress() string { return s.frontend }

// UIURL is the Web UI's base URL, empty when the UI is off. The browser logs in through
// trust.LoginURL(UIURL, token).
func (s *Server) UIURL() string {
	if s.uiAddr == "" {
		return ""
	}
	return "http://" + s.uiAddr
}

// InternalAddresses are the gRPC addresses of the server's internal services (internal
// frontend, history, matching, worker), by service name: all require internode mTLS.
func (s *Server) InternalAddresses() map[string]string { return s.internal }

// Stop stops the UI, then the server. Workers using the server should be stopped first.
func (s *Server) Stop() error {
	if s.ui != nil {
		_ = s.ui.Close()
		<-s.uiDone
		s.ui = nil
	}
	if s.uiClose != nil {
		s.uiClose()
		s.uiClose = nil
	}
	if s.server == nil {
		return nil
	}
	s.stopping.Store(true)
	err := s.server.Stop()
	s.server = nil
	if err != nil {
		return fmt.Errorf("embedded temporal: stop: %w", err)
	}
	return nil
}

// stores are the embedded server's two SQLite databases: the history's (DBFile) and the
// visibility store's (VisibilityFile).
type stores struct {
	main, visibility *serverconfig.SQL
}

// prepareDatabase creates the data directory and, on a new file, the schema; it creates the
// namespace when missing (an existing one is left as it is; the caller reconciles retention and
// search attributes through the API), and prepares the visibility store (prepareVisibility).
func prepareDatabase(opts Options) (stores, error) {
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return stores{}, fmt.Errorf("embedded temporal: data_dir: %w", err)
	}
	dbPath := filepath.Join(opts.DataDir, DBFile)
	sqlCfg := &serverconfig.SQL{
		// Temporal's SQLite plugin on a driver that keeps its compiled statements (sqlitecache).
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			// normal: a commit reaches the disk at the next fsync of the log; the frontend answers
			// a client's call only after one (DurableCalls, a group commit: durable.go), so a
			// message whose Telegram offset has advanced survives a power loss, not just a crash.
			"synchronous":  "normal",
			"busy_timeout": "10000",
		},
		// One connection, as Temporal's own dev server: SQLite takes one writer at a time, and
		// with four connections a transaction that begins reading and then writes meets another
		// writer and fails with SQLITE_BUSY at once (busy_timeout cannot help a deadlock); the
		// server logged dozens of those in its first minute. The visibility store has a file,
		// and so a connection, of its own (VisibilityFile).
		MaxConns:     1,
		MaxIdleConns: 1,
	}
	mainNew := false
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		mainNew = true
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			_ = os.Remove(dbPath)
			return stores{}, fmt.Errorf("embedded temporal: create schema in %s: %w", dbPath, err)
		}
	} else if err != nil {
		return stores{}, fmt.Errorf("embedded temporal: %w", err)
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return stores{}, fmt.Errorf("embedded temporal: namespace %q: %w", opts.Namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(opts.Retention)
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return stores{}, fmt.Errorf("embedded temporal: create namespace %q in %s: %w", opts.Namespace, dbPath, err)
	}
	visCfg, err := prepareVisibility(sqlCfg, mainNew, opts.SearchAttributes)
	if err != nil {
		return stores{}, err
	}
	return stores{main: sqlCfg, visibility: visCfg}, nil
}

// SingleNodePersistenceQPS is the embedded server's persistence rate limit per service, far
// above what one SQLite connection serves (Temporal's defaults, 2000-9000 per host, are shares
// of a cluster's database).
const SingleNodePersistenceQPS = 100000

// SingleNodeVisibilityRPS is how many list and count calls a second the embedded server takes
// per namespace (Temporal's default, 10 with no burst, is a tenant's share of a cluster: hooks
// that run back to back, `starter pending` and the Web UI went over it, and each call refused
// waited out the SDK's back-off, 350-490 ms).
const SingleNodeVisibilityRPS = 1000

// TimerShift is how far ahead of now the embedded server schedules a new timer at the earliest.
// Temporal's default, 1 s, leaves room for clocks that differ between the hosts of a cluster;
// one process has one clock, and with 1 s every shorter timer fired after a second (a digest
// gathering for 250 ms pushed after 1 s, and the first reminder was 1.0-1.15 s late).
const TimerShift = 100 * time.Millisecond

// MaxInFlightUpdates is how many updates one workflow admits at once on the embedded server.
const MaxInFlightUpdates = 100

// HistoryCacheSize bounds the workflows whose state the embedded server keeps in memory.
const HistoryCacheSize = 2000

// VisibilityWriters is how many visibility writes the embedded server's history service runs at
// once (Temporal's default is 512). SQLite takes one writer at a time, so a second writer only
// waits for the lock, holding a connection meanwhile.
const VisibilityWriters = 1

// VisibilityConns is the visibility store's connections: one for the writer and one more, so
// that a list never waits for a write to commit. With a single connection a hook's list of
// pending intents queued behind the burst's inserts, each holding it through its fsync
// (synchronous=full): the list's query took up to 214 ms in the 50-session burst, and under
// 50 ms once it had a connection of its own. Lists read the write-ahead log beside the writer.
const VisibilityConns = VisibilityWriters + 1

// serverOptions are the server's options and its internal services' addresses; release lets go
// of the claim on their ports once the server has bound them (freePorts).
func serverOptions(opts Options, dbs stores) (_ []temporal.ServerOption, _ map[string]string, release func(), err error) {
	ports, release, err := freePorts(opts.DataDir, 4)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("embedded temporal: pick internal ports: %w", err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	host := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	frontendSelf := net.JoinHostPort(loopbackFor(opts.IP), strconv.Itoa(opts.Port))
	certs, err := ensureInternodeTLS(filepath.Join(opts.DataDir, TLSDir))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("embedded temporal: %w", err)
	}

	cfg := &serverconfig.Config{}
	cfg.Global.Membership.MaxJoinDuration = 30 * time.Second
	cfg.Global.Membership.BroadcastAddress = "127.0.0.1"
	cfg.Persistence = serverconfig.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite-visibility",
		NumHistoryShards: 1,
		DataStores: map[string]serverconfig.DataStore{
			"sqlite":            {SQL: dbs.main},
			"sqlite-visibility": {SQL: dbs.visibility},
		},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendSelf},
		},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	// The public frontend speaks plain gRPC and admits only calls with the access token
	// (ClaimMapper, Authorizer). The server's own services reach each other, and the system
	// workers reach the frontend API, through the internal frontend; all of those speak mTLS
	// with the certificates in data_dir/tls (internode), so a local process without the node
	// key cannot call them. PublicClient is left empty: the system workers then find the
	// internal frontend through membership and use the internode TLS config.
	cfg.Services = map[string]serverconfig.Service{
		"frontend":          {RPC: serverconfig.RPC{GRPCPort: opts.Port, BindOnIP: opts.IP}},
		"internal-frontend": {RPC: serverconfig.RPC{GRPCPort: ports[3], BindOnLocalHost: true}},
		"history":           {RPC: serverconfig.RPC{GRPCPort: ports[0], BindOnLocalHost: true}},
		"matching":          {RPC: serverconfig.RPC{GRPCPort: ports[1], BindOnLocalHost: true}},
		"worker":            {RPC: serverconfig.RPC{GRPCPort: ports[2], BindOnLocalHost: true}},
	}
	cfg.Global.TLS = serverconfig.RootTLS{
		Internode: serverconfig.GroupTLS{
			Server: serverconfig.ServerTLS{CertFile: certs.Cert, KeyFile: certs.Key, ClientCAFiles: []string{certs.CA}, RequireClientAuth: true},
			Client: serverconfig.ClientTLS{ServerName: InternodeServerName, RootCAFiles: []string{certs.CA}},
		},
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"

	logger := serverlog.NewZapLogger(opts.Logger)
	claimMapper := ClaimMapper(opts.Token)
	dyn := dynamicConfig()
	internal := map[string]string{
		string(primitives.InternalFrontendService): host(ports[3]),
		string(primitives.HistoryService):          host(ports[0]),
		string(primitives.MatchingService):         host(ports[1]),
		string(primitives.WorkerService):           host(ports[2]),
	}
	return []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.Services),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService:         static.SingleLocalHost(frontendSelf),
			primitives.InternalFrontendService: static.SingleLocalHost(host(ports[3])),
			primitives.HistoryService:          static.SingleLocalHost(host(ports[0])),
			primitives.MatchingService:         static.SingleLocalHost(host(ports[1])),
			primitives.WorkerService:           static.SingleLocalHost(host(ports[2])),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(Authorizer()),
		temporal.WithClaimMapper(func(*serverconfig.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
		temporal.WithChainedFrontendGrpcInterceptors(DurableCalls(NewGroupSync(FileSync(dbs.main.DatabaseName + "-wal")).Sync)),
	}, internal, release, nil
}

// checkFree fails with a PortInUseError when addr cannot be bound.
func checkFree(addr, key string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return &PortInUseError{Addr: addr, Key: key, Err: err}
	}
	return l.Close()
}

// freePorts picks n free loopback ports for the server's internal services, below the kernel's
// ephemeral range: a port the kernel hands out as the source of an outgoing connection can be
// taken between the pick and the server's bind (the server then exits at start), one outside
// it only by a program that binds it on purpose. Each pick is also claimed, until release, by a
// lock file of this user's (claimPort): another intentq server starting on this machine at the
// same moment (a second worker, parallel tests) finds the port free too, and without the claim
// both bound it and one exited ("address already in use"). The claims live in this user's lock
// folder (instance.LockDir: a private runtime folder, else dataDir), never in a shared one.
func freePorts(dataDir string, n int) (ports []int, release func(), err error) {
	dir, err := portsDir(dataDir)
	if err != nil {
		return nil, nil, err
	}
	defer dir.Close()
	var listeners []net.Listener
	var claims []*os.File
	release = func() {
		for _, f := range claims {
			_ = f.Close()
		}
	}
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	low := ephemeralLow()
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		addr := "127.0.0.1:0"
		if low > internalPortsFrom+1000 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(internalPortsFrom+rand.IntN(low-internalPortsFrom)))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		claim, ok, err := claimPort(dir, port)
		if err != nil {
			_ = l.Close()
			release()
			return nil, nil, err
		}
		if !ok {
			_ = l.Close()
			continue
		}
		listeners, claims = append(listeners, l), append(claims, claim)
		ports = append(ports, port)
	}
	if len(ports) < n {
		release()
		return nil, nil, fmt.Errorf("no %d free ports below %d", n, low)
	}
	return ports, release, nil
}

// portsDir is the folder of the port claims: "ports" in this user's lock folder, opened by
// descriptor and checked to be this user's own (0700).
func portsDir(dataDir string) (*os.File, error) {
	locks, err := instance.LockDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("port claims: %w", err)
	}
	defer locks.Close()
	dir, err := private.OpenDirAt(locks, "ports")
	if err != nil {
		return nil, fmt.Errorf("port claims: %w", err)
	}
	return dir, nil
}

// claimPort takes this process's lock on port: a file in dir, flock'd (the kernel lets go of it
// when the process ends), opened without following a link. ok is false when another process
// holds it.
func claimPort(dir *os.File, port int) (_ *os.File, ok bool, err error) {
	f, ok, err := instance.TryLock(dir, strconv.Itoa(port))
	if err != nil {
		return nil, false, fmt.Errorf("claim port %d: %w", port, err)
	}
	if !ok {
		_ = f.Close()
		return nil, false, nil
	}
	return f, true, nil
}

// internalPortsFrom is the lowest port freePorts picks.
const internalPortsFrom = 20000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return low
}

// uiIP is where the Web UI listens: ip when it is a loopback address, else 127.0.0.1 (the UI
// answers only to loopback host names; reach it from elsewhere through an SSH tunnel).
func uiIP(ip string) string {
	if trust.LoopbackIP(ip) && ip != "localhost" {
		return ip
	}
	return "127.0.0.1"
}

// loopbackFor turns an unspecified bind address into one that can be dialled.
func loopbackFor(ip string) string {
	if parsed := net.ParseIP(ip); parsed == nil || parsed.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip
}

// waitHTTP polls url until it answers 200 or ctx ends.
func waitHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not answering at %s: %w", url, ctx.Err())
		case <-ticker.C:
		}
	}
}

func envName(key string) string {
	out := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '.':
			c = '_'
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// dynamicConfig is the embedded server's dynamic config.
//
// A single node on one SQLite connection: the database serialises every call itself, so the
// persistence rate limits meant to share a cluster's database only turn a burst into
// "Persistence Max QPS Reached" errors. Search attributes are registered with the namespace
// before the server starts (prepareDatabase), so nothing needs the debug-only
// system.forceSearchAttributesCacheRefreshOnRead (a metadata read on every visibility call).
func dynamicConfig() dynamicconfig.StaticClient {
	dyn := dynamicconfig.StaticClient{}
	for _, setting := range []dynamicconfig.GlobalIntSetting{
		dynamicconfig.FrontendPersistenceMaxQPS,
		dynamicconfig.HistoryPersistenceMaxQPS,
		dynamicconfig.MatchingPersistenceMaxQPS,
		dynamicconfig.WorkerPersistenceMaxQPS,
	} {
		dyn[setting.Key()] = SingleNodePersistenceQPS
	}
	dyn[dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key()] = SingleNodeVisibilityRPS
	dyn[dynamicconfig.TimerProcessorMaxTimeShift.Key()] = TimerShift
	// Updates one workflow admits at once (Temporal's default is 10): agents that write to one
	// inbox together, or hooks that take from one session, are refused above it and back off
	// for seconds; 200 senders to one inbox took 20-60 s instead of 6 s.
	dyn[dynamicconfig.WorkflowExecutionMaxInFlightUpdates.Key()] = MaxInFlightUpdates
	// Workflows whose state the history service keeps in memory (Temporal's default, 128,000,
	// holds every pending intent of a big backlog for an hour); the rest are read from SQLite
	// when they wake.
	dyn[dynamicconfig.HistoryCacheHostLevelMaxSize.Key()] = HistoryCacheSize
	dyn[dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key()] = VisibilityWriters
	// Both stores run on Temporal's SQLite plugin under intentq's name (sqliteplugin). The
	// server reads a visibility store's kind from that name in two places, set here as it sets
	// them for "sqlite": queries through the plugin's own converter, and no lists of values in a
	// keyword search attribute.
	dyn[dynamicconfig.VisibilityEnableUnifiedQueryConverter.Key()] = true
	dyn[dynamicconfig.VisibilityAllowList.Key()] = false
	// External payloads (payloads kept outside history, an SDK feature intentq does not use):
	// with them on, the history service walks every new event's payloads to add up their
	// external sizes, on a fresh goroutine whose stack grows each time. That was 4.4 % of the
	// worker's CPU in the 50-session burst, with nothing to count.
	dyn[dynamicconfig.ExternalPayloadsEnabled.Key()] = false
	return dyn
}
