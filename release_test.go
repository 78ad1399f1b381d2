package intentq_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/intentq/intentq/internal/base/version"
)

type goreleaserFile struct {
	Builds []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Tags    []string `yaml:"tags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		IDs     []string `yaml:"ids"`
		Formats []string `yaml:"formats"`
		Files   []string `yaml:"files"`
	} `yaml:"archives"`
	NFPMs []struct {
		IDs     []string `yaml:"ids"`
		Formats []string `yaml:"formats"`
		Bindir  string   `yaml:"bindir"`
	} `yaml:"nfpms"`
	Dockers []struct {
		IDs        []string `yaml:"ids"`
		Dockerfile string   `yaml:"dockerfile"`
	} `yaml:"dockers_v2"`
}

// TestReleaseConfig checks .goreleaser.yaml without building (GoReleaser's own check is make
// release-check): every binary for linux and darwin, amd64 and arm64, built as make build builds
// it (static, the Makefile's build tag, the version set in the version package); every archive
// and the Debian package hold all three; the image copies the release's own binaries; the lines
// make release-linux narrows are there; VERSION is a release CHANGELOG.md has an entry for.
func TestReleaseConfig(t *testing.T) {
	raw, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaserFile
	if err := yaml.Unmarshal(raw, &g); err != nil {
		t.Fatalf(".goreleaser.yaml does not parse: %v", err)
	}
	makefile, _ := os.ReadFile("Makefile")
	tag := regexp.MustCompile(`(?m)^GOFLAGS \?= -tags=(\S+)$`).FindSubmatch(makefile)
	if tag == nil {
		t.Fatal("the Makefile sets no GOFLAGS build tag")
	}
	binaries := []string{"worker", "starter", "intentq-hook"}
	var ids []string
	for _, b := range g.Builds {
		ids = append(ids, b.ID)
		if b.Main != "./"+b.Binary {
			t.Errorf("build %s: main %s, binary %s", b.ID, b.Main, b.Binary)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") || !slices.Contains(b.Tags, string(tag[1])) {
			t.Errorf("build %s: env %v, flags %v, tags %v; want CGO_ENABLED=0, -trimpath, %s", b.ID, b.Env, b.Flags, b.Tags, tag[1])
		}
		ld := strings.Join(b.Ldflags, " ")
		for _, v := range []string{"Version", "Commit"} {
			if !strings.Contains(ld, "-X github.com/intentq/intentq/internal/base/version."+v+"=") {
				t.Errorf("build %s does not set version.%s: %s", b.ID, v, ld)
			}
		}
		if !slices.Equal(b.Goos, []string{"linux", "darwin"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
			t.Errorf("build %s: goos %v, goarch %v", b.ID, b.Goos, b.Goarch)
		}
	}
	_ = version.Version + version.Commit // the variables the ldflags set
	if !slices.Equal(ids, binaries) {
		t.Errorf("builds %v, want %v", ids, binaries)
	}
	if len(g.Archives) != 1 || !slices.Equal(g.Archives[0].IDs, binaries) || !slices.Equal(g.Archives[0].Formats, []string{"tar.gz"}) {
		t.Errorf("archives %+v: want one tar.gz of %v", g.Archives, binaries)
	} else {
		for _, f := range []string{"README.md", "CHANGELOG.md", "intentq.example.yaml"} {
			if !slices.Contains(g.Archives[0].Files, f) {
				t.Errorf("the archive lacks %s", f)
			}
		}
	}
	if len(g.NFPMs) != 1 || !slices.Equal(g.NFPMs[0].IDs, binaries) || g.NFPMs[0].Bindir != "/usr/bin" || !slices.Contains(g.NFPMs[0].Formats, "deb") {
		t.Errorf("nfpms %+v: want a deb of %v in /usr/bin", g.NFPMs, binaries)
	}
	if len(g.Dockers) != 1 || !slices.Equal(g.Dockers[0].IDs, binaries) {
		t.Fatalf("dockers_v2 %+v: want one image of %v", g.Dockers, binaries)
	}
	dockerfile, err := os.ReadFile(g.Dockers[0].Dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dockerfile), "go build") {
		t.Errorf("%s builds again: it copies the release's binaries", g.Dockers[0].Dockerfile)
	}
	for _, b := range binaries {
		if !strings.Contains(string(dockerfile), "$TARGETPLATFORM/"+b) {
			t.Errorf("%s does not copy the release's %s", g.Dockers[0].Dockerfile, b)
		}
	}
	for _, line := range []string{"    goos: &goos ", "    goarch: &goarch "} {
		if n := strings.Count(string(raw), "\n"+line); n != 1 {
			t.Errorf(".goreleaser.yaml has %d lines %q (make release-linux narrows exactly one)", n, line)
		}
	}

	v, err := os.ReadFile("VERSION")
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(v))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(release) {
		t.Fatalf("VERSION %q is not a release number", release)
	}
	changelog, _ := os.ReadFile("CHANGELOG.md")
	if !strings.Contains(string(changelog), "\n## "+strings.TrimSuffix(release, "-dev")+"\n") {
		t.Errorf("CHANGELOG.md has no entry for %s", release)
	}
}
