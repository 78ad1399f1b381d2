package intentq_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/intentq/intentq/config"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		DependsOn   any               `yaml:"depends_on"`
	} `yaml:"services"`
}

// TestComposeFile checks docker-compose.yml without a Docker engine: the services exist, the
// worker uses the compose Temporal, its env names are real config keys, and every published
// port is on loopback.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	for _, name := range []string{"postgresql", "temporal", "temporal-ui", "intentq-worker-1", "intentq-worker-2"} {
		if _, ok := cf.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	temporal := cf.Services["temporal"]
	if !strings.HasPrefix(temporal.Image, "temporalio/auto-setup:") || temporal.Environment["POSTGRES_SEEDS"] != "postgresql" {
		t.Errorf("temporal service = %+v, want auto-setup on the postgresql service", temporal)
	}
	if !contains(temporal.Ports, "127.0.0.1:7233:7233") {
		t.Errorf("temporal ports = %v, want 127.0.0.1:7233:7233", temporal.Ports)
	}
	if ui := cf.Services["temporal-ui"]; ui.Environment["TEMPORAL_ADDRESS"] != "temporal:7233" {
		t.Errorf("temporal-ui TEMPORAL_ADDRESS = %q", ui.Environment["TEMPORAL_ADDRESS"])
	}
	for _, name := range []string{"intentq-worker-1", "intentq-worker-2"} {
		worker := cf.Services[name]
		if worker.Build == nil {
			t.Errorf("%s must be built from this repository", name)
		}
		if got := worker.Environment["INTENTQ_TEMPORAL_ADDRESS"]; got != "temporal:7233" {
			t.Errorf("%s INTENTQ_TEMPORAL_ADDRESS = %q, want temporal:7233", name, got)
		}
		if worker.Environment["INTENTQ_TEMPORAL_ENCRYPTION_KEY_FILE"] == "" {
			t.Errorf("%s has no encryption keyring: message text would reach the cluster", name)
		}
		var env []string
		for k, v := range worker.Environment {
			env = append(env, k+"="+v)
		}
		if err := config.CheckEnv(env); err != nil {
			t.Errorf("%s environment: %v", name, err)
		}
	}
	for name, svc := range cf.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q beyond loopback", name, p)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestClusterScriptMatchesCompose keeps scripts/cluster-up (the same topology without Docker) in
// step with docker-compose.yml: the versions (and those of the modules the script builds), the
// published ports, the namespace and the workers' environment names.
func TestClusterScriptMatchesCompose(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("scripts/cluster-up")
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=(?:\$\{` + name + `:-)?([^}\s]+)\}?$`).FindStringSubmatch(string(script))
		if m == nil {
			t.Fatalf("scripts/cluster-up does not set %s", name)
		}
		return m[1]
	}
	gomod, _ := os.ReadFile("go.mod")
	for _, c := range []struct{ image, version, module string }{
		{"postgres:", value("POSTGRES_VERSION"), ""},
		{"temporalio/auto-setup:", value("TEMPORAL_VERSION"), "go.temporal.io/server v"},
		{"temporalio/ui:", value("UI_VERSION"), "github.com/temporalio/ui-server/v2 v"},
	} {
		found := false
		for _, svc := range cf.Services {
			if strings.HasPrefix(svc.Image, c.image) {
				found = true
				if svc.Image != c.image+c.version {
					t.Errorf("compose runs %s, the script %s%s", svc.Image, c.image, c.version)
				}
			}
		}
		if !found {
			t.Errorf("compose has no %s image", c.image)
		}
		if c.module != "" && !strings.Contains(string(gomod), c.module+c.version) {
			t.Errorf("go.mod does not require %s%s, which the script builds", c.module, c.version)
		}
	}
	ports := map[string]string{
		"postgresql":       "",
		"temporal":         "127.0.0.1:" + value("TEMPORAL_PORT") + ":7233",
		"temporal-ui":      "127.0.0.1:" + value("UI_PORT") + ":8080",
		"intentq-worker-1": "127.0.0.1:" + value("INGEST_BASE") + ":8787",
	}
	for svc, want := range ports {
		if want != "" && !contains(cf.Services[svc].Ports, want) {
			t.Errorf("compose %s publishes %v, the script %s", svc, cf.Services[svc].Ports, want)
		}
	}
	if got := cf.Services["temporal"].Environment["DEFAULT_NAMESPACE"]; got != value("DEFAULT_NAMESPACE") {
		t.Errorf("namespace: compose %q, script %q", got, value("DEFAULT_NAMESPACE"))
	}
	if got := cf.Services["postgresql"].Environment["POSTGRES_USER"]; got != value("POSTGRES_USER") {
		t.Errorf("database user: compose %q, script %q", got, value("POSTGRES_USER"))
	}
	// Every INTENTQ_ variable the script gives its workers is one compose gives too, and a config key.
	names := regexp.MustCompile(`(INTENTQ_[A-Z_]+)=`).FindAllStringSubmatch(string(script), -1)
	worker := cf.Services["intentq-worker-1"].Environment
	var env []string
	for _, m := range names {
		env = append(env, m[1]+"=x")
		switch m[1] {
		case "INTENTQ_DATA_DIR", "INTENTQ_METRICS_LISTEN": // per process on one machine; compose has volumes and one port each
			continue
		}
		if _, ok := worker[m[1]]; !ok {
			t.Errorf("the script sets %s, compose does not", m[1])
		}
	}
	if err := config.CheckEnv(env); err != nil {
		t.Errorf("the script's worker environment: %v", err)
	}
}
