package intentq_test

import (
	"os"
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
	for _, name := range []string{"postgresql", "temporal", "temporal-ui", "intentq-worker"} {
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
	worker := cf.Services["intentq-worker"]
	if worker.Build == nil {
		t.Error("intentq-worker must be built from this repository")
	}
	if got := worker.Environment["INTENTQ_TEMPORAL_ADDRESS"]; got != "temporal:7233" {
		t.Errorf("worker INTENTQ_TEMPORAL_ADDRESS = %q, want temporal:7233", got)
	}
	var env []string
	for k, v := range worker.Environment {
		env = append(env, k+"="+v)
	}
	if err := config.CheckEnv(env); err != nil {
		t.Errorf("worker environment: %v", err)
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
