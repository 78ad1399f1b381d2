package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"go.temporal.io/server/temporaltest"
	"go.uber.org/zap/zaptest"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/base/instance"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

// TestEmbeddedDefault is `make run` in-process: with no temporal.address, the service runs the
// embedded server and UI, the worker and ingest, and the doctor finds every part ok.
func TestEmbeddedDefault(t *testing.T) {
	ctx := context.Background()
	cfg := testenv.Config(t)
	testenv.Agent(t, os.Environ(), cfg.Sessions[config.DefaultSessionName].TmuxTarget, cfg.Claude.Settings)
	svc := testenv.StartService(t, cfg, zaptest.NewLogger(t))

	report := doctor.Run(ctx, cfg, zaptest.NewLogger(t))
	var out bytes.Buffer
	_ = report.WriteText(&out)
	if !report.OK() {
		t.Fatalf("doctor found problems:\n%s", out.String())
	}
	for _, name := range []string{"config", "data_dir", "access token", "listeners", "temporal", "namespace", "search attributes", "version floor", "worker", "probe", "web ui", "ingest", "tmux secretary", "hooks"} {
		if !hasCheck(report, name) {
			t.Errorf("doctor did not pass %s:\n%s", name, out.String())
		}
	}

	// Issue 38: a second worker on this data_dir is refused at once, naming the first, before
	// it opens anything (its ports stay free).
	second := *cfg
	second.Temporal.Embedded.Port = testenv.FreePort(t)
	second.Temporal.Embedded.UIPort = testenv.FreePort(t)
	second.Ingest.Listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	_, err := service.Start(ctx, &second, zaptest.NewLogger(t))
	var inUse *instance.InUseError
	if !errors.As(err, &inUse) || inUse.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), cfg.DataDir) {
		t.Errorf("a second worker on the same data_dir: %v, want it refused naming pid %d", err, os.Getpid())
	}
	if l, lerr := net.Listen("tcp", second.Ingest.Listen); lerr != nil {
		t.Errorf("the refused worker opened its ingest port: %v", lerr)
	} else {
		l.Close()
	}

	// The Web UI answers the holder of the access token (the browser: through the login URL).
	req, _ := http.NewRequest(http.MethodGet, cfg.UIAddress()+"/namespaces/default/workflows", nil)
	req.Header.Set("Authorization", "Bearer "+svc.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("UI workflows page: %s", resp.Status)
	}
	if resp, err := http.Get(cfg.UIAddress() + "/namespaces/default/workflows"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("UI without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, f := range svc.Fields() {
		if f.Key == "ui" && f.String != trust.LoginURL(cfg.UIAddress(), svc.Token()) {
			t.Errorf("ready's ui = %q, want the login URL", f.String)
		}
	}
}

func hasCheck(r doctor.Report, name string) bool {
	for _, res := range r {
		if res.Name == name && res.OK {
			return true
		}
	}
	return false
}

// TestExternalAddress: with temporal.address set, no embedded server starts (its port is held
// by someone else and would fail), the worker registers the search attributes on the external
// namespace and the doctor passes.
func TestExternalAddress(t *testing.T) {
	ctx := context.Background()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	cfg := testenv.Config(t)
	testenv.Agent(t, os.Environ(), cfg.Sessions[config.DefaultSessionName].TmuxTarget, cfg.Claude.Settings)
	cfg.Temporal.Address = ts.GetFrontendHostPort()
	cfg.Temporal.Namespace = ts.GetDefaultNamespace()
	// An external cluster: payloads are encrypted (temporal.encryption.mode auto) with a keyring.
	if _, err := encryption.AppendKey(cfg.EncryptionKeyFile()); err != nil {
		t.Fatal(err)
	}

	held, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Temporal.Embedded.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	svc := testenv.StartService(t, cfg, zaptest.NewLogger(t))

	report := doctor.Run(ctx, cfg, zaptest.NewLogger(t))
	var out bytes.Buffer
	_ = report.WriteText(&out)
	if !report.OK() {
		t.Fatalf("doctor found problems:\n%s", out.String())
	}
	if hasCheck(report, "web ui") {
		t.Errorf("doctor checked the embedded UI in external mode:\n%s", out.String())
	}
	for _, f := range svc.Fields() {
		if f.Key == "embedded" && f.Integer != 0 {
			t.Error("ready fields say embedded in external mode")
		}
	}
}

// TestDoctorWithoutTemporal: nothing runs; Temporal fails with a hint and what needs it is not
// checked.
func TestDoctorWithoutTemporal(t *testing.T) {
	cfg := testenv.Config(t)
	report := doctor.Run(context.Background(), cfg, zaptest.NewLogger(t))
	if report.OK() {
		t.Fatal("doctor passed with nothing running")
	}
	var out bytes.Buffer
	_ = report.WriteText(&out)
	for _, want := range []string{"FAIL  temporal", "hint: start the worker", "--    worker", "FAIL  ingest"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestIngestPortInUse: a taken ingest port is an error naming ingest.listen, and the embedded
// server started before it is stopped again (its port is free afterwards).
func TestIngestPortInUse(t *testing.T) {
	cfg := testenv.Config(t)
	held, err := net.Listen("tcp", cfg.Ingest.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = service.Start(context.Background(), cfg, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), "ingest.listen") {
		t.Fatalf("err = %v, want one naming ingest.listen", err)
	}
	l, err := net.Listen("tcp", cfg.TemporalAddress())
	if err != nil {
		t.Fatalf("embedded server still holds its port after a failed start: %v", err)
	}
	l.Close()
}
