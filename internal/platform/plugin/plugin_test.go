package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/peers"
)

const (
	fixtureDir = "testdata/claude-plugins-official"
	marketName = "claude-plugins-official"
	testURL    = "http://127.0.0.1:8787/v1/intents"
	testToken  = "s3cr3t-ingest-token"
	// testTokenFile and testSpool are where the block finds the token and spools.
	testTokenFile = "/home/u/.intentq/plugin/ingest.token"
	testSpool     = "/home/u/.intentq/spool"
	settingsDoc   = `{"enabledPlugins":{"telegram@claude-plugins-official":true}}`
)

// bunPath finds bun for the tests (peers.Bun): the patcher's syntax check is real.
func bunPath(t *testing.T) string { return peers.Bun(t) }

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fakeHome is a Claude home built from the real fixtures.
type fakeHome struct {
	claude    string // <home>/.claude
	settings  string // secretary settings.json
	mpDir     string // the marketplace directory
	mpJSON    string // its marketplace.json
	pluginDir string
	serverTS  string
}

func newHome(t *testing.T, serverTS []byte) fakeHome {
	t.Helper()
	home := t.TempDir()
	h := fakeHome{claude: filepath.Join(home, ".claude")}
	h.settings = filepath.Join(h.claude, "secretary", "settings.json")
	h.mpDir = filepath.Join(h.claude, "plugins", "marketplaces", marketName)
	h.mpJSON = filepath.Join(h.mpDir, ".claude-plugin", "marketplace.json")
	h.pluginDir = filepath.Join(h.mpDir, "external_plugins", "telegram")
	h.serverTS = filepath.Join(h.pluginDir, "server.ts")
	writeFile(t, h.settings, []byte(settingsDoc))
	writeFile(t, h.mpJSON, fixture(t, ".claude-plugin/marketplace.json"))
	writeFile(t, filepath.Join(h.pluginDir, "package.json"), fixture(t, "external_plugins/telegram/package.json"))
	if serverTS == nil {
		serverTS = fixture(t, "external_plugins/telegram/server.ts")
	}
	writeFile(t, h.serverTS, serverTS)
	return h
}

func (h fakeHome) resolve(t *testing.T) Target {
	t.Helper()
	tg, err := Resolve(h.claude, h.settings)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return tg
}

var testFiles = Files{TokenFile: testTokenFile, SpoolDir: testSpool}

func testBlock(t *testing.T) Blocks {
	t.Helper()
	b, err := Block(testURL, testFiles)
	if err != nil {
		t.Fatalf("Block: %v", err)
	}
	return b
}

// setSource rewrites the telegram entry's source in the fake marketplace.json.
func (h fakeHome) setSource(t *testing.T, source any) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(readFile(t, h.mpJSON), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc["plugins"].([]any) {
		if m := p.(map[string]any); m["name"] == "telegram" {
			m["source"] = source
		}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.mpJSON, data)
}

// dirNames lists a directory, for "nothing else was written" checks.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// bunBuilds runs bun build --no-bundle on file.
func bunBuilds(t *testing.T, bun, file string) {
	t.Helper()
	if out, err := bunCheck(bun, file, 0); err != nil {
		t.Fatalf("bun build %s: %v\n%s", file, err, out)
	}
}

// checkPatched asserts that file holds block once, right before the anchor, inside
// handleInbound and indented like the anchor.
func checkPatched(t *testing.T, file string, blocks Blocks) {
	t.Helper()
	block := blocks.Ingest
	src := string(readFile(t, file))
	if !strings.HasSuffix(src, blocks.Canary) || strings.Count(src, CanaryBegin) != 1 {
		t.Fatalf("the canary is not at the end of %s", file)
	}
	if strings.Contains(src, testToken) {
		t.Fatalf("the ingest token is in %s", file)
	}
	if n := strings.Count(src, BeginMarker); n != 1 {
		t.Fatalf("%d BEGIN markers in %s", n, file)
	}
	lines := strings.Split(src, "\n")
	anchor := -1
	for i, l := range lines {
		if strings.Contains(l, Anchor) {
			anchor = i
		}
	}
	indent := lines[anchor][:len(lines[anchor])-len(strings.TrimLeft(lines[anchor], " "))]
	blockLines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	first := anchor - len(blockLines)
	for i, bl := range blockLines {
		want := indent + bl
		if bl == "" {
			want = ""
		}
		if lines[first+i] != want {
			t.Fatalf("line %d = %q, want %q (block not right before the anchor)", first+i+1, lines[first+i], want)
		}
	}
	fn := strings.Index(src, "async function handleInbound(")
	begin := strings.Index(src, BeginMarker)
	end := strings.Index(src[fn:], "\n}\n") + fn
	if fn < 0 || begin < fn || begin > end {
		t.Fatalf("block at %d is not inside handleInbound (%d-%d)", begin, fn, end)
	}
}

func TestResolveFixture(t *testing.T) {
	h := newHome(t, nil)
	tg := h.resolve(t)
	resolved := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if tg.Marketplace != marketName || tg.PluginDir != resolved(h.pluginDir) || tg.ServerTS != resolved(h.serverTS) {
		t.Errorf("target = %+v", tg)
	}
	if want := filepath.Join(h.claude, "plugins", "cache", marketName, "telegram"); tg.CacheRoot != want {
		t.Errorf("CacheRoot = %s, want %s", tg.CacheRoot, want)
	}
	if tg.SettingsPath != h.settings || tg.MarketplaceJSON != resolved(h.mpJSON) {
		t.Errorf("target = %+v", tg)
	}
}

func TestResolveThroughSymlinkedHome(t *testing.T) {
	// ~/.claude itself a symlink (dotfiles setups): still inside the (resolved) root.
	h := newHome(t, nil)
	link := filepath.Join(t.TempDir(), "claude-link")
	if err := os.Symlink(h.claude, link); err != nil {
		t.Fatal(err)
	}
	tg, err := Resolve(link, h.settings)
	if err != nil {
		t.Fatalf("Resolve through a symlinked home: %v", err)
	}
	if !strings.HasSuffix(tg.ServerTS, filepath.Join("external_plugins", "telegram", "server.ts")) {
		t.Errorf("ServerTS = %s", tg.ServerTS)
	}
}

func TestResolveObjectSource(t *testing.T) {
	h := newHome(t, nil)
	h.setSource(t, map[string]any{"source": "local", "path": "./external_plugins/telegram"})
	h.resolve(t)

	for _, src := range []any{
		map[string]any{"source": "github", "repo": "evil/telegram"},
		map[string]any{"source": "git-subdir", "url": "https://github.com/x/y.git", "path": "telegram"},
		map[string]any{"source": "url", "url": "https://example.com/t.git"},
		map[string]any{"path": "./external_plugins/telegram"},
	} {
		h.setSource(t, src)
		_, err := Resolve(h.claude, h.settings)
		if !errors.Is(err, ErrUnsupportedSource) || !strings.Contains(err.Error(), h.mpJSON) {
			t.Errorf("source %v: err = %v, want ErrUnsupportedSource naming %s", src, err, h.mpJSON)
		}
	}
}

func TestPatchFresh(t *testing.T) {
	bun := bunPath(t)
	orig := fixture(t, "external_plugins/telegram/server.ts")
	h := newHome(t, orig)
	tg := h.resolve(t)
	block := testBlock(t)
	if st, err := State(tg, block); err != nil || st != StateUnpatched {
		t.Fatalf("State before = %q, %v", st, err)
	}
	before := dirNames(t, h.pluginDir)

	res, err := Patch(tg, block, PatchOptions{Bun: bun})
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	if !res.Changed || res.Before != StateUnpatched || res.File != tg.ServerTS {
		t.Errorf("result = %+v", res)
	}
	checkPatched(t, h.serverTS, block)
	bunBuilds(t, bun, h.serverTS)
	if got := readFile(t, res.Backup); string(got) != string(orig) {
		t.Error("backup differs from the original")
	}
	if res.Backup != h.serverTS+".intentq-backup" {
		t.Errorf("backup = %s", res.Backup)
	}
	// Only the backup appeared: no temp files, no bun output beside the plugin.
	after := dirNames(t, h.pluginDir)
	if want := append(append([]string{}, before...), "server.ts.intentq-backup"); strings.Join(after, ",") != strings.Join(sortedCopy(want), ",") {
		t.Errorf("plugin dir = %v, want %v", after, want)
	}
	if info, err := os.Stat(h.serverTS); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("mode after patch = %v, %v; want 0644 kept", info.Mode(), err)
	}
	if st, err := State(tg, block); err != nil || st != StatePatched {
		t.Errorf("State after = %q, %v", st, err)
	}
	// Nothing but the blocks was added.
	without := strings.Replace(string(readFile(t, h.serverTS)), indentBlock(block.Ingest, "  "), "", 1)
	without = strings.TrimSuffix(without, block.Canary)
	if without != string(orig) {
		t.Error("patch changed more than inserting the block")
	}
}

func sortedCopy(s []string) []string {
	c := append([]string{}, s...)
	sort.Strings(c)
	return c
}

func indentBlock(block, indent string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(block, "\n") {
		if l != "" && l != "\n" {
			b.WriteString(indent)
		}
		b.WriteString(l)
	}
	return b.String()
}

func TestPatchBackupDir(t *testing.T) {
	bun := bunPath(t)
	h := newHome(t, nil)
	tg := h.resolve(t)
	backups := filepath.Join(t.TempDir(), "data", "backups")
	res, err := Patch(tg, testBlock(t), PatchOptions{Bun: bun, BackupDir: backups})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(res.Backup) != backups {
		t.Errorf("backup %s not in %s", res.Backup, backups)
	}
	if _, err := os.Stat(h.serverTS + ".intentq-backup"); !errors.Is(err, os.ErrNotExist) {
		t.Error("a backup was written beside server.ts although BackupDir is set")
	}
	if info, err := os.Stat(res.Backup); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("backup mode = %v, %v; want 0600", info.Mode(), err)
	}
}

func TestRepatchIsNoop(t *testing.T) {
	bun := bunPath(t)
	h := newHome(t, nil)
	tg := h.resolve(t)
	block := testBlock(t)
	if _, err := Patch(tg, block, PatchOptions{Bun: bun}); err != nil {
		t.Fatal(err)
	}
	patched := readFile(t, h.serverTS)
	info1, _ := os.Stat(h.serverTS)
	time.Sleep(10 * time.Millisecond)
	// No bun is needed (nor run) when nothing changes.
	res, err := Patch(tg, block, PatchOptions{Bun: filepath.Join(t.TempDir(), "no-bun")})
	if err != nil {
		t.Fatalf("second Patch: %v", err)
	}
	if res.Changed || res.Before != StatePatched || res.Backup != "" {
		t.Errorf("second result = %+v, want unchanged", res)
	}
	if string(readFile(t, h.serverTS)) != string(patched) {
		t.Error("second Patch changed the file")
	}
	if info2, _ := os.Stat(h.serverTS); !info2.ModTime().Equal(info1.ModTime()) {
		t.Error("second Patch rewrote the file")
	}
}

func TestUpgradeRepatches(t *testing.T) {
	bun := bunPath(t)
	orig := fixture(t, "external_plugins/telegram/server.ts")
	h := newHome(t, orig)
	tg := h.resolve(t)
	block := testBlock(t)
	if _, err := Patch(tg, block, PatchOptions{Bun: bun}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.serverTS, orig) // the plugin updated itself: our block is gone
	if st, err := State(tg, block); err != nil || st != StateUnpatched {
		t.Fatalf("State after upgrade = %q, %v", st, err)
	}
	res, err := Patch(tg, block, PatchOptions{Bun: bun})
	if err != nil || !res.Changed {
		t.Fatalf("Patch after upgrade: %+v, %v", res, err)
	}
	checkPatched(t, h.serverTS, block)
}

func TestOlderBlockReplaced(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	older := "  // BEGIN intentq ingest v1\n" +
		"  try { void fetch('http://127.0.0.1:9999/v1/intents', { method: 'POST', body: JSON.stringify({ chat_id, text }) }).catch(() => {}) } catch {}\n" +
		"  // END intentq ingest\n"
	i := strings.Index(orig, "  "+Anchor)
	h := newHome(t, []byte(orig[:i]+older+orig[i:]))
	tg := h.resolve(t)
	block := testBlock(t)
	if st, err := State(tg, block); err != nil || st != StateOutdated {
		t.Fatalf("State = %q, %v; want outdated", st, err)
	}
	res, err := Patch(tg, block, PatchOptions{Bun: bun})
	if err != nil || !res.Changed || res.Before != StateOutdated {
		t.Fatalf("Patch: %+v, %v", res, err)
	}
	checkPatched(t, h.serverTS, block)
	got := string(readFile(t, h.serverTS))
	if strings.Contains(got, "9999") || strings.Contains(got, "ingest v1") {
		t.Error("the older block is still there")
	}

	// Same version, other token file: outdated too, replaced.
	other, err := Block(testURL, Files{TokenFile: "/elsewhere/ingest.token", SpoolDir: testSpool})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := State(tg, other); st != StateOutdated {
		t.Errorf("State with another token = %q", st)
	}
	if _, err := Patch(tg, other, PatchOptions{Bun: bun}); err != nil {
		t.Fatal(err)
	}
	checkPatched(t, h.serverTS, other)
	if strings.Contains(string(readFile(t, h.serverTS)), testTokenFile) {
		t.Error("old token file left behind")
	}
}

func TestOldestFixturePatches(t *testing.T) {
	bun := bunPath(t)
	h := newHome(t, fixture(t, "external_plugins/telegram/server.ts.1b33c1d9"))
	tg := h.resolve(t)
	block := testBlock(t)
	if _, err := Patch(tg, block, PatchOptions{Bun: bun}); err != nil {
		t.Fatalf("Patch oldest: %v", err)
	}
	checkPatched(t, h.serverTS, block)
	bunBuilds(t, bun, h.serverTS)
	// There the anchor is followed by `void mcp.notification({`.
	src := string(readFile(t, h.serverTS))
	at := strings.Index(src, Anchor)
	if !strings.Contains(src[at:at+200], "void mcp.notification({") {
		t.Error("oldest fixture: anchor not followed by void mcp.notification")
	}
}

func TestTraversalRefused(t *testing.T) {
	t.Run("source ../../../etc", func(t *testing.T) {
		h := newHome(t, nil)
		h.setSource(t, "../../../etc")
		_, err := Resolve(h.claude, h.settings)
		if !errors.Is(err, ErrOutsideRoot) || !strings.Contains(err.Error(), "../../../etc") {
			t.Errorf("err = %v, want ErrOutsideRoot naming the source", err)
		}
	})
	t.Run("source to a missing dir outside", func(t *testing.T) {
		h := newHome(t, nil)
		h.setSource(t, "../../../../no/such/dir")
		if _, err := Resolve(h.claude, h.settings); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("err = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("object source ../..", func(t *testing.T) {
		h := newHome(t, nil)
		h.setSource(t, map[string]any{"source": "local", "path": "../../../etc"})
		if _, err := Resolve(h.claude, h.settings); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("err = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("absolute source", func(t *testing.T) {
		h := newHome(t, nil)
		h.setSource(t, t.TempDir())
		if _, err := Resolve(h.claude, h.settings); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("err = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("symlinked plugin dir", func(t *testing.T) {
		h := newHome(t, nil)
		outside := filepath.Join(t.TempDir(), "telegram")
		if err := os.Rename(h.pluginDir, outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, h.pluginDir); err != nil {
			t.Fatal(err)
		}
		orig := readFile(t, filepath.Join(outside, "server.ts"))
		before := dirNames(t, outside)
		_, err := Resolve(h.claude, h.settings)
		if !errors.Is(err, ErrOutsideRoot) || !strings.Contains(err.Error(), outside) {
			t.Errorf("err = %v, want ErrOutsideRoot naming %s", err, outside)
		}
		// A Target that points through the link (built by hand, or a link swapped in after
		// Resolve) is refused by Patch and State too.
		forged := Target{Marketplace: marketName, MarketplacesRoot: mustReal(t, filepath.Dir(h.mpDir)), PluginDir: h.pluginDir, ServerTS: h.serverTS}
		if _, err := Patch(forged, testBlock(t), PatchOptions{Bun: bunPath(t)}); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("Patch through the link: err = %v, want ErrOutsideRoot", err)
		}
		if _, err := State(forged, testBlock(t)); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("State through the link: err = %v, want ErrOutsideRoot", err)
		}
		if string(readFile(t, filepath.Join(outside, "server.ts"))) != string(orig) ||
			strings.Join(dirNames(t, outside), ",") != strings.Join(before, ",") {
			t.Error("something was written outside the root")
		}
	})
	t.Run("symlinked server.ts", func(t *testing.T) {
		h := newHome(t, nil)
		outside := filepath.Join(t.TempDir(), "server.ts")
		if err := os.Rename(h.serverTS, outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, h.serverTS); err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(h.claude, h.settings); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("err = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("symlinked marketplace dir", func(t *testing.T) {
		h := newHome(t, nil)
		outside := filepath.Join(t.TempDir(), "mp")
		if err := os.Rename(h.mpDir, outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, h.mpDir); err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(h.claude, h.settings); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("err = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("symlink inside the root is fine", func(t *testing.T) {
		h := newHome(t, nil)
		moved := filepath.Join(h.mpDir, "real-telegram")
		if err := os.Rename(h.pluginDir, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, h.pluginDir); err != nil {
			t.Fatal(err)
		}
		tg := h.resolve(t)
		if tg.ServerTS != filepath.Join(mustReal(t, moved), "server.ts") {
			t.Errorf("ServerTS = %s", tg.ServerTS)
		}
	})
}

// Issue 33, item 8 (try 24): a same-user process swaps a folder of the plugin for a link to a
// folder outside the marketplaces (or cache) root after the patcher resolved and checked its
// target, right before the write. The patcher reads and writes through the root it opened,
// so the write is refused (ErrOutsideRoot) and nothing outside changes.
func TestSwapAfterResolveWritesNothingOutside(t *testing.T) {
	bun := bunPath(t)
	blocks := testBlock(t)
	// swap moves dir outside the root and leaves a link to it in its place.
	swap := func(t *testing.T, dir string) string {
		t.Helper()
		outside := filepath.Join(t.TempDir(), filepath.Base(dir))
		if err := os.Rename(dir, outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, dir); err != nil {
			t.Fatal(err)
		}
		return outside
	}
	// untouched asserts that the folder outside holds what it held before the swap.
	untouched := func(t *testing.T, outside string, names []string, src []byte) {
		t.Helper()
		if got := dirNames(t, outside); strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("outside the root: %v, want %v", got, names)
		}
		if !bytes.Equal(readFile(t, filepath.Join(outside, "server.ts")), src) {
			t.Error("server.ts outside the root was changed")
		}
	}
	for _, backupDir := range []string{"", "backups"} {
		t.Run("marketplace, backup "+map[string]string{"": "beside", "backups": "in data_dir"}[backupDir], func(t *testing.T) {
			h := newHome(t, nil)
			tg := h.resolve(t)
			file, err := checkTarget(tg)
			if err != nil {
				t.Fatal(err)
			}
			defer file.close()
			src, mode, err := file.read(MaxServerTSBytes, "server.ts")
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := plan(src, blocks, file.path)
			if err != nil {
				t.Fatal(err)
			}
			names := dirNames(t, tg.PluginDir)
			outside := swap(t, tg.PluginDir)

			opts := PatchOptions{Bun: bun}
			if backupDir != "" {
				opts.BackupDir = filepath.Join(t.TempDir(), backupDir)
			}
			var res Result
			err = writeChecked(file, "telegram", src, out, mode, bun, opts, &res)
			if !errors.Is(err, ErrOutsideRoot) || res.Changed {
				t.Errorf("write through the swapped folder: %v (changed %v), want ErrOutsideRoot", err, res.Changed)
			}
			if err := restore(file, src, mode); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("restore through the swapped folder: %v, want ErrOutsideRoot", err)
			}
			if err := verify(file, out); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("verify through the swapped folder: %v, want ErrOutsideRoot", err)
			}
			untouched(t, outside, names, src)
			// And from the top: Patch and State refuse the swapped target, naming it.
			if _, err := Patch(tg, blocks, opts); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("Patch: %v, want ErrOutsideRoot", err)
			}
			if _, err := State(tg, blocks); !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("State: %v, want ErrOutsideRoot", err)
			}
			untouched(t, outside, names, src)
		})
	}
	t.Run("cache", func(t *testing.T) {
		orig := string(fixture(t, "external_plugins/telegram/server.ts"))
		_, tg := cacheHome(t, map[string]string{"0.0.4": withV1(orig, v1Block)})
		ct, ok, err := CacheTarget(tg)
		if err != nil || !ok {
			t.Fatalf("CacheTarget: %v %v", ok, err)
		}
		file, err := openPlace(ct.MarketplacesRoot, ct.ServerTS)
		if err != nil {
			t.Fatal(err)
		}
		defer file.close()
		src, mode, err := file.read(MaxServerTSBytes, "cached server.ts")
		if err != nil {
			t.Fatal(err)
		}
		cleaned, _, err := removeV1(string(src), file.path)
		if err != nil {
			t.Fatal(err)
		}
		names := dirNames(t, ct.PluginDir)
		outside := swap(t, ct.PluginDir)
		var res Result
		err = writeChecked(file, "telegram-cache", src, []byte(cleaned), mode, bun, PatchOptions{Bun: bun}, &res)
		if !errors.Is(err, ErrOutsideRoot) || res.Changed {
			t.Errorf("write through the swapped folder: %v (changed %v), want ErrOutsideRoot", err, res.Changed)
		}
		untouched(t, outside, names, src)
	})
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAnchorProblemsWriteNothing(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	cases := map[string]struct {
		src  string
		want string
	}{
		"missing":  {strings.Replace(orig, Anchor, "// image path goes in meta", 1), "no anchor"},
		"twice":    {strings.Replace(orig, "async function handleInbound(", "  "+Anchor+"\nasync function handleInbound(", 1), "found 2 times"},
		"no end":   {strings.Replace(orig, "  "+Anchor, "  "+BeginMarker+" v1\n  "+Anchor, 1), "without"},
		"two dups": {strings.Replace(orig, "  "+Anchor, "  "+BeginMarker+" v1\n  "+EndMarker+"\n  "+BeginMarker+" v1\n  "+EndMarker+"\n  "+Anchor, 1), "more than one"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHome(t, []byte(c.src))
			tg := h.resolve(t)
			before := dirNames(t, h.pluginDir)
			_, err := Patch(tg, testBlock(t), PatchOptions{Bun: bun})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), tg.ServerTS) {
				t.Fatalf("err = %v, want %q naming %s", err, c.want, tg.ServerTS)
			}
			if string(readFile(t, h.serverTS)) != c.src {
				t.Error("server.ts changed")
			}
			if strings.Join(dirNames(t, h.pluginDir), ",") != strings.Join(before, ",") {
				t.Error("files were written")
			}
			if _, err := State(tg, testBlock(t)); err == nil {
				t.Error("State accepted the file")
			}
		})
	}
}

func TestHostileJSON(t *testing.T) {
	huge := `{"enabledPlugins":{"telegram@claude-plugins-official":true},"pad":"` + strings.Repeat("x", MaxJSONBytes) + `"}`
	settingsCases := map[string]struct {
		doc  string
		want string
	}{
		"array":                {`[]`, "not a JSON object"},
		"string":               {`"telegram@x"`, "not a JSON object"},
		"null":                 {`null`, "not a JSON object"},
		"garbage":              {`{"enabledPlugins":`, "not a JSON object"},
		"enabledPlugins array": {`{"enabledPlugins":["telegram@claude-plugins-official"]}`, "enabledPlugins is not a JSON object"},
		"dotdot":               {`{"enabledPlugins":{"telegram@../x":true}}`, "invalid marketplace name"},
		"slash":                {`{"enabledPlugins":{"telegram@a/b":true}}`, "invalid marketplace name"},
		"dots":                 {`{"enabledPlugins":{"telegram@a..b":true}}`, "invalid marketplace name"},
		"empty":                {`{"enabledPlugins":{"telegram@":true}}`, "invalid marketplace name"},
		"not bool":             {`{"enabledPlugins":{"telegram@claude-plugins-official":"yes"}}`, "not true or false"},
		"disabled":             {`{"enabledPlugins":{"telegram@claude-plugins-official":false}}`, "enables no telegram"},
		"missing":              {`{}`, "no enabledPlugins"},
		"two":                  {`{"enabledPlugins":{"telegram@a":true,"telegram@b":true}}`, "several marketplaces"},
		"huge":                 {huge, "limit"},
	}
	for name, c := range settingsCases {
		t.Run("settings "+name, func(t *testing.T) {
			h := newHome(t, nil)
			writeFile(t, h.settings, []byte(c.doc))
			_, err := Resolve(h.claude, h.settings)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), h.settings) {
				t.Errorf("err = %v, want %q naming %s", err, c.want, h.settings)
			}
		})
	}
	t.Run("other plugins are ignored", func(t *testing.T) {
		h := newHome(t, nil)
		writeFile(t, h.settings, []byte(`{"enabledPlugins":{"x@../..":[1],"telegram@claude-plugins-official":true}}`))
		h.resolve(t)
	})

	mpCases := map[string]struct {
		doc  string
		want string
	}{
		"array":       {`[]`, "not a JSON object"},
		"no plugins":  {`{"name":"x"}`, "no plugin named"},
		"plugins obj": {`{"plugins":{"telegram":{}}}`, "not a JSON object"},
		"twice":       {`{"plugins":[{"name":"telegram","source":"./a"},{"name":"telegram","source":"./b"}]}`, "twice"},
		"bad source":  {`{"plugins":[{"name":"telegram","source":42}]}`, "neither"},
		"empty":       {`{"plugins":[{"name":"telegram","source":""}]}`, "empty source"},
		"url string":  {`{"plugins":[{"name":"telegram","source":"https://evil.example/t"}]}`, "not a directory path"},
		"huge":        {`{"plugins":[],"pad":"` + strings.Repeat("x", MaxJSONBytes) + `"}`, "limit"},
	}
	for name, c := range mpCases {
		t.Run("marketplace.json "+name, func(t *testing.T) {
			h := newHome(t, nil)
			writeFile(t, h.mpJSON, []byte(c.doc))
			_, err := Resolve(h.claude, h.settings)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "marketplace.json") {
				t.Errorf("err = %v, want %q naming marketplace.json", err, c.want)
			}
		})
	}
	t.Run("huge server.ts", func(t *testing.T) {
		h := newHome(t, []byte("// handleInbound\n"+strings.Repeat("x", MaxServerTSBytes)))
		_, err := Resolve(h.claude, h.settings)
		if err == nil || !strings.Contains(err.Error(), "limit") || !strings.Contains(err.Error(), "server.ts") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("server.ts without handleInbound", func(t *testing.T) {
		h := newHome(t, []byte("console.log('hi')\n"))
		_, err := Resolve(h.claude, h.settings)
		if err == nil || !strings.Contains(err.Error(), "handleInbound") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no marketplace dir", func(t *testing.T) {
		h := newHome(t, nil)
		writeFile(t, h.settings, []byte(`{"enabledPlugins":{"telegram@other-market":true}}`))
		_, err := Resolve(h.claude, h.settings)
		if err == nil || !strings.Contains(err.Error(), "other-market") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestMetadataPluginRoot(t *testing.T) {
	h := newHome(t, nil)
	writeFile(t, h.mpJSON, []byte(`{"metadata":{"pluginRoot":"./external_plugins"},"plugins":[{"name":"telegram","source":"telegram"}]}`))
	if tg := h.resolve(t); tg.PluginDir != mustReal(t, h.pluginDir) {
		t.Errorf("PluginDir = %s", tg.PluginDir)
	}
}

func TestBunFailureRestores(t *testing.T) {
	bun := bunPath(t)
	t.Run("failing bun", func(t *testing.T) {
		orig := fixture(t, "external_plugins/telegram/server.ts")
		h := newHome(t, orig)
		tg := h.resolve(t)
		fake := filepath.Join(t.TempDir(), "bun")
		writeFile(t, fake, []byte("#!/bin/sh\necho 'error: boom'\necho '  authorization: \"Bearer "+testToken+"\"'\nexit 1\n"))
		if err := os.Chmod(fake, 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := Patch(tg, testBlock(t), PatchOptions{Bun: fake})
		if !errors.Is(err, ErrBunFailed) || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), tg.ServerTS) {
			t.Fatalf("err = %v, want ErrBunFailed with bun's output", err)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Error("the error shows the token")
		}
		if res.Changed {
			t.Error("Changed after a restore")
		}
		if string(readFile(t, h.serverTS)) != string(orig) {
			t.Error("server.ts not restored byte for byte")
		}
		if string(readFile(t, res.Backup)) != string(orig) {
			t.Error("backup lost")
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		orig := fixture(t, "external_plugins/telegram/server.ts")
		h := newHome(t, orig)
		tg := h.resolve(t)
		bad := BeginMarker + " v2\nconst broken = ( 'Bearer " + testToken + "'\n" + EndMarker + "\n"
		_, err := Patch(tg, Blocks{Ingest: bad, Canary: testBlock(t).Canary}, PatchOptions{Bun: bun})
		if !errors.Is(err, ErrBunFailed) {
			t.Fatalf("err = %v, want ErrBunFailed", err)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("the error shows the token: %v", err)
		}
		if string(readFile(t, h.serverTS)) != string(orig) {
			t.Error("server.ts not restored byte for byte")
		}
		bunBuilds(t, bun, h.serverTS)
	})
	t.Run("no bun", func(t *testing.T) {
		orig := fixture(t, "external_plugins/telegram/server.ts")
		h := newHome(t, orig)
		tg := h.resolve(t)
		before := dirNames(t, h.pluginDir)
		_, err := Patch(tg, testBlock(t), PatchOptions{Bun: filepath.Join(t.TempDir(), "missing-bun")})
		if !errors.Is(err, ErrNoBun) {
			t.Fatalf("err = %v, want ErrNoBun", err)
		}
		if string(readFile(t, h.serverTS)) != string(orig) || strings.Join(dirNames(t, h.pluginDir), ",") != strings.Join(before, ",") {
			t.Error("something was written without bun")
		}
	})
}

func TestIngestURLAndBlockURL(t *testing.T) {
	for _, u := range []string{
		"http://10.0.0.1:8787/v1/intents", "http://example.com/v1/intents", "https://ntfy.sh/x",
		"http://127.0.0.1@evil.example/v1/intents", "http://localhost.evil.example/", "ftp://127.0.0.1/",
		"http://user:pw@127.0.0.1:8787/", "127.0.0.1:8787", "http://127.0.0.1:8787/v1/intents?x=1", "",
	} {
		if _, err := Block(u, testFiles); err == nil {
			t.Errorf("Block accepted %q", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8787/v1/intents", "http://localhost:1/x", "http://[::1]:8787/v1/intents", "http://127.0.0.2:80/v1/intents"} {
		if _, err := Block(u, testFiles); err != nil {
			t.Errorf("Block refused %q: %v", u, err)
		}
	}
	for listen, want := range map[string]string{
		"127.0.0.1:8787": "http://127.0.0.1:8787/v1/intents",
		":8787":          "http://127.0.0.1:8787/v1/intents",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/v1/intents",
		"[::1]:8787":     "http://[::1]:8787/v1/intents",
		"localhost:1":    "http://localhost:1/v1/intents",
	} {
		if got, err := IngestURL(listen); err != nil || got != want {
			t.Errorf("IngestURL(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
	for _, listen := range []string{"192.168.1.5:8787", "nohost", "example.com:80"} {
		if _, err := IngestURL(listen); err == nil {
			t.Errorf("IngestURL(%q) accepted", listen)
		}
	}
	for _, f := range []Files{{TokenFile: "relative/token", SpoolDir: testSpool}, {TokenFile: testTokenFile, SpoolDir: ""},
		{TokenFile: "/a\nb", SpoolDir: testSpool}, {TokenFile: testTokenFile, SpoolDir: "/s\x00"}} {
		if _, err := Block(testURL, f); err == nil {
			t.Errorf("Block accepted %+v", f)
		}
	}
}

// No token in server.ts: the block names the token file, and paths with quotes and backticks
// are JSON literals that compile.
func TestBlockHasNoTokenAndQuotesPaths(t *testing.T) {
	bun := bunPath(t)
	for _, dir := range []string{testSpool, `/tmp/q"uo'te\back` + "`${x}`" + `</script>`, "/tmp/ユニコード"} {
		f := Files{TokenFile: dir + "/ingest.token", SpoolDir: dir}
		b, err := Block(testURL, f)
		if err != nil {
			t.Fatalf("Block(%q): %v", dir, err)
		}
		lit, _ := json.Marshal(f.TokenFile)
		if n := strings.Count(b.Ingest, string(lit)); n != 1 {
			t.Errorf("token file literal %s appears %d times", lit, n)
		}
		if strings.Contains(b.Ingest+b.Canary, "Bearer \"") || strings.Contains(b.Ingest, testToken) {
			t.Errorf("a token is written into the block")
		}
		// The blocks compile on their own (with their free names declared).
		file := filepath.Join(t.TempDir(), "block.ts")
		writeFile(t, file, []byte(blockHarness(b, "123", "7", "'hi'", "{ username: 'ken', id: 42 }")))
		bunBuilds(t, bun, file)
	}
}

// blockHarness wraps the blocks in a script declaring the names handleInbound has in scope,
// the canary at the top level as in server.ts.
func blockHarness(b Blocks, chatID, msgID, text, from string) string {
	return harness(b, "const chat_id = String("+chatID+")", msgID, text, from)
}

// harness is blockHarness with the chat_id line given (an upstream rename leaves it out).
func harness(b Blocks, chatLine, msgID, text, from string) string {
	block := b.Ingest
	return "const ctx = { message: { date: 1767225600 } }\n" +
		"async function handleInbound() {\n" +
		"  const from = " + from + "\n" +
		"  " + chatLine + "\n" +
		"  const msgId: number | undefined = " + msgID + "\n" +
		"  const text = " + text + "\n" +
		indentBlock(block, "  ") +
		"  console.log('after block')\n" +
		"}\n" +
		"await handleInbound()\n" +
		b.Canary
}

// TestBlockSpoolsThenPosts runs the blocks with bun: the canary records the file that runs;
// every message is first appended to the process's spool file, then posted with the token read
// from the token file; with ingest down the message is still in the spool; a name renamed
// upstream becomes an error record with the message's IDs, and the code after the block runs.
func TestBlockSpoolsThenPosts(t *testing.T) {
	bun := bunPath(t)
	var mu sync.Mutex
	var bodies []map[string]any
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		mu.Lock()
		bodies = append(bodies, m)
		auths = append(auths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	state := t.TempDir()
	files := Files{TokenFile: filepath.Join(state, "plugin", "ingest.token"), SpoolDir: filepath.Join(state, "spool")}
	writeFile(t, files.TokenFile, []byte(testToken+"\n"))
	blocks, err := Block(srv.URL+"/v1/intents", files)
	if err != nil {
		t.Fatal(err)
	}
	var lastFile string
	run := func(script string) string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "run.ts")
		lastFile = file
		writeFile(t, file, []byte(script))
		cmd := exec.Command(bun, "run", file)
		cmd.Dir = filepath.Dir(file)
		cmd.WaitDelay = time.Second
		done := make(chan struct{})
		var out []byte
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("bun run hung")
		}
		if err != nil {
			t.Fatalf("bun run: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "after block") {
			t.Fatalf("code after the block did not run:\n%s", out)
		}
		return string(out)
	}
	spooled := func() []map[string]any {
		t.Helper()
		var out []map[string]any
		names, _ := filepath.Glob(filepath.Join(files.SpoolDir, "spool-*.jsonl"))
		for _, name := range names {
			if info, err := os.Stat(name); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v, want 0600", name, info.Mode(), err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, name))), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("spool line %q: %v", line, err)
				}
				out = append(out, m)
			}
		}
		return out
	}
	run(blockHarness(blocks, "123", "7", "'hello \"world\" ✓'", "{ username: 'ken', id: 42 }"))
	run(blockHarness(blocks, "123", "8", "'two'", "undefined as any")) // no from: still recorded, user empty
	run(blockHarness(blocks, "123", "undefined", "'x'", "{ id: 1 }"))  // no message id: nothing
	mu.Lock()
	if len(bodies) != 2 {
		t.Fatalf("got %d posts, want 2: %v", len(bodies), bodies)
	}
	want := "POST /v1/intents Bearer " + testToken + " application/json"
	for _, a := range auths {
		if a != want {
			t.Errorf("request = %q, want %q", a, want)
		}
	}
	b := bodies[0]
	if b["chat_id"] != "123" || b["message_id"] != "7" || b["text"] != `hello "world" ✓` || b["user"] != "ken" || b["ts"] != float64(1767225600) {
		t.Errorf("body = %v", b)
	}
	mu.Unlock()
	if sp := spooled(); len(sp) != 2 || sp[0]["message_id"] != "7" || sp[1]["message_id"] != "8" || sp[0]["text"] != `hello "world" ✓` {
		t.Errorf("spool = %v", sp)
	}

	// Ingest down: nothing thrown, nothing blocked, and the message waits in the spool.
	srv.Close()
	out := run(blockHarness(blocks, "123", "9", "'nine'", "{ id: 1 }"))
	if !strings.Contains(out, "it waits in the spool") {
		t.Errorf("no stderr note for an unreachable ingest:\n%s", out)
	}
	if sp := spooled(); len(sp) != 3 || sp[2]["message_id"] != "9" {
		t.Errorf("spool after ingest down = %v", sp)
	}

	// Upstream renamed chat_id: the block throws ReferenceError inside its try; the error is
	// recorded with the message ID, and handleInbound goes on.
	run(harness(blocks, "const chatId = String(123)", "10", "'ten'", "{ id: 1 }"))
	events := string(readFile(t, filepath.Join(files.SpoolDir, "events.jsonl")))
	var loaded, failed int
	for _, line := range strings.Split(strings.TrimSpace(events), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch e["kind"] {
		case "loaded":
			loaded++
			if e["version"] != float64(BlockVersion) || !strings.HasSuffix(fmt.Sprint(e["file"]), "run.ts") {
				t.Errorf("canary = %v", e)
			}
		case "error":
			failed++
			if e["message_id"] != "10" || e["chat_id"] != nil || !strings.Contains(fmt.Sprint(e["error"]), "chat_id") {
				t.Errorf("error record = %v", e)
			}
		}
	}
	if loaded != 5 || failed != 1 {
		t.Errorf("%d canary and %d error records, want 5 and 1:\n%s", loaded, failed, events)
	}
	_ = lastFile
}

// A plugin version that renamed a name the block uses is refused at patch time, before
// anything is written: the block would throw for every message.
func TestPatchRefusesUnboundNames(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	renamed := strings.Replace(orig, "const chat_id = String(ctx.chat!.id)", "const chatId = String(ctx.chat!.id)", 1)
	if renamed == orig {
		t.Fatal("the fixture no longer declares chat_id as expected")
	}
	h := newHome(t, []byte(renamed))
	tg := h.resolve(t)
	_, err := Patch(tg, testBlock(t), PatchOptions{Bun: bun})
	if !errors.Is(err, ErrUnbound) || !strings.Contains(err.Error(), "chat_id") {
		t.Fatalf("err = %v, want ErrUnbound naming chat_id", err)
	}
	if string(readFile(t, h.serverTS)) != renamed {
		t.Error("server.ts changed")
	}
	// Destructuring binds too.
	destructured := strings.Replace(orig, "const chat_id = String(ctx.chat!.id)", "const { chat_id: chat_id = String(ctx.chat!.id) } = {} as any", 1)
	h2 := newHome(t, []byte(destructured))
	if _, err := Patch(h2.resolve(t), testBlock(t), PatchOptions{Bun: bun}); err != nil {
		t.Errorf("destructured chat_id refused: %v", err)
	}
}

func TestBindingNames(t *testing.T) {
	for pattern, want := range map[string]string{
		"x":                               "x",
		"{ a, b: c, d = 1, ...e }":        "a c d e",
		"[x, , y]":                        "x y",
		"{ a: { b, c: [d] } }":            "b d",
		"msgId: number | undefined ":      "msgId",
		"{ from, chat: { id: chat_id } }": "from chat_id",
	} {
		if got := strings.Join(bindingNames(pattern), " "); got != want {
			t.Errorf("bindingNames(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// v1Block is the old patch the seed's scripts left in the cache copy.
const v1Block = "  // INTENT_RECORDING_PATCH — safety net: record to intents DB before MCP delivery\n" +
	"  try {\n" +
	"    Bun.spawn([\"/bin/bash\", \"/home/u/.claude/scripts/record-intent.sh\", String(chat_id), String(msgId ?? \"\")], { stdin: new Blob([text]).stream() })\n" +
	"  } catch (e) {\n" +
	"    console.error(\"[intent-recording]\", e)\n" +
	"  }\n"

func withV1(src, v1 string) string {
	i := strings.Index(src, "  "+Anchor)
	return src[:i] + v1 + src[i:]
}

func cacheHome(t *testing.T, versions map[string]string) (fakeHome, Target) {
	t.Helper()
	h := newHome(t, nil)
	tg := h.resolve(t)
	for v, src := range versions {
		writeFile(t, filepath.Join(tg.CacheRoot, v, "server.ts"), []byte(src))
	}
	return h, tg
}

func TestCleanV1Cache(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	patched := withV1(orig, v1Block)
	_, tg := cacheHome(t, map[string]string{"0.0.9": patched, "0.0.10": patched, "0.0.7": patched})
	res, err := CleanV1Cache(tg, PatchOptions{Bun: bun})
	if err != nil {
		t.Fatalf("CleanV1Cache: %v", err)
	}
	newest := filepath.Join(tg.CacheRoot, "0.0.10", "server.ts")
	if !res.Changed || res.File != mustReal(t, newest) || res.RemovedBytes != len(v1Block) {
		t.Errorf("result = %+v", res)
	}
	if string(readFile(t, newest)) != orig {
		t.Error("0.0.10 is not the original after cleanup")
	}
	for _, v := range []string{"0.0.9", "0.0.7"} {
		if string(readFile(t, filepath.Join(tg.CacheRoot, v, "server.ts"))) != patched {
			t.Errorf("%s was touched", v)
		}
	}
	if string(readFile(t, res.Backup)) != patched {
		t.Error("backup differs")
	}
	// Again: nothing left to do.
	if res, err := CleanV1Cache(tg, PatchOptions{Bun: bun}); err != nil || res.Changed {
		t.Errorf("second cleanup = %+v, %v", res, err)
	}
}

func TestCleanV1CacheExplicitEnd(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	v1 := "  // INTENT_RECORDING_PATCH BEGIN\n  if (msgId != null) {\n    void Bun.spawn(['/bin/true', String(msgId)])\n  }\n  // INTENT_RECORDING_PATCH END\n"
	_, tg := cacheHome(t, map[string]string{"0.0.4": withV1(orig, v1)})
	res, err := CleanV1Cache(tg, PatchOptions{Bun: bun})
	if err != nil || !res.Changed {
		t.Fatalf("CleanV1Cache: %+v, %v", res, err)
	}
	if string(readFile(t, res.File)) != orig {
		t.Error("not the original after cleanup")
	}
}

func TestCleanV1CacheBounds(t *testing.T) {
	bun := bunPath(t)
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	small := "  // INTENT_RECORDING_PATCH\n  }\n"
	large := "  // INTENT_RECORDING_PATCH — safety net\n  try {\n" + strings.Repeat("    void 0 // padding padding padding padding\n", 30) + "  } catch {\n  }\n"
	noEnd := "  // INTENT_RECORDING_PATCH — safety net\n"
	for name, v1 := range map[string]string{"small": small, "large": large, "no end": noEnd} {
		t.Run(name, func(t *testing.T) {
			src := withV1(orig, v1)
			if name == "no end" {
				// Cut off everything after the marker that could end the block.
				src = src[:strings.Index(src, "INTENT_RECORDING_PATCH")] + "INTENT_RECORDING_PATCH\n"
			}
			_, tg := cacheHome(t, map[string]string{"0.0.5": src})
			dir := filepath.Join(tg.CacheRoot, "0.0.5")
			res, err := CleanV1Cache(tg, PatchOptions{Bun: bun})
			if !errors.Is(err, ErrSuspiciousV1Span) || res.Changed || !strings.Contains(err.Error(), "server.ts") {
				t.Fatalf("err = %v, res = %+v; want ErrSuspiciousV1Span", err, res)
			}
			if string(readFile(t, filepath.Join(dir, "server.ts"))) != src {
				t.Error("file changed")
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("files written: %v", names)
			}
		})
	}
}

func TestCleanV1CacheNothingToDo(t *testing.T) {
	orig := string(fixture(t, "external_plugins/telegram/server.ts"))
	noBun := PatchOptions{Bun: "/nonexistent/bun"} // never needed when nothing changes
	t.Run("no cache", func(t *testing.T) {
		_, tg := cacheHome(t, nil)
		if res, err := CleanV1Cache(tg, noBun); err != nil || res.Changed {
			t.Errorf("= %+v, %v", res, err)
		}
	})
	t.Run("no version dirs", func(t *testing.T) {
		_, tg := cacheHome(t, map[string]string{"latest": withV1(orig, v1Block)})
		if res, err := CleanV1Cache(tg, noBun); err != nil || res.Changed {
			t.Errorf("= %+v, %v", res, err)
		}
	})
	t.Run("no v1 block", func(t *testing.T) {
		_, tg := cacheHome(t, map[string]string{"0.0.4": orig, "0.0.3": withV1(orig, v1Block)})
		if res, err := CleanV1Cache(tg, noBun); err != nil || res.Changed {
			t.Errorf("= %+v, %v", res, err)
		}
	})
	t.Run("no server.ts", func(t *testing.T) {
		h, tg := cacheHome(t, map[string]string{"0.0.3": withV1(orig, v1Block)})
		_ = h
		if err := os.MkdirAll(filepath.Join(tg.CacheRoot, "0.0.4"), 0o755); err != nil {
			t.Fatal(err)
		}
		if res, err := CleanV1Cache(tg, noBun); err != nil || res.Changed {
			t.Errorf("= %+v, %v", res, err)
		}
	})
	t.Run("symlinked server.ts", func(t *testing.T) {
		_, tg := cacheHome(t, nil)
		outside := filepath.Join(t.TempDir(), "server.ts")
		writeFile(t, outside, []byte(withV1(orig, v1Block)))
		if err := os.MkdirAll(filepath.Join(tg.CacheRoot, "0.0.4"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(tg.CacheRoot, "0.0.4", "server.ts")); err != nil {
			t.Fatal(err)
		}
		if _, err := CleanV1Cache(tg, noBun); err == nil {
			t.Error("followed a symlink out of the cache")
		}
		if string(readFile(t, outside)) != withV1(orig, v1Block) {
			t.Error("outside file changed")
		}
	})
}

func TestVersionOrder(t *testing.T) {
	names := []string{"0.0.9", "0.0.10", "0.0.7", "1.0.0", "0.10.0", "0.9.12", "10", "2", "0.0.10a", "0.0.010"}
	got := append([]string{}, names...)
	sort.Slice(got, func(i, j int) bool { return versionLess(got[i], got[j]) })
	want := []string{"0.0.7", "0.0.9", "0.0.010", "0.0.10", "0.0.10a", "0.9.12", "0.10.0", "1.0.0", "2", "10"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order = %v, want %v", got, want)
	}
	// Agree with sort -V where it is available (GNU coreutils).
	if sortBin, err := exec.LookPath("sort"); err == nil {
		cmd := exec.Command(sortBin, "-V")
		cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
		if out, err := cmd.Output(); err == nil {
			if sv := strings.Fields(string(out)); strings.Join(sv, " ") != strings.Join(want, " ") {
				t.Logf("sort -V gives %v (informational)", sv)
			}
		}
	}
}
