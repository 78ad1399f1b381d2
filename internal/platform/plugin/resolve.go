package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// pluginName is the plugin intentq patches.
const pluginName = "telegram"

// marketplaceNameRE is what a marketplace name may look like: it becomes a path component.
var marketplaceNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Resolve finds the Telegram plugin's server.ts statically, without looking at running
// processes: settingsPath (the secretary's settings.json) must enable exactly one
// "telegram@<marketplace>"; <claudeHome>/plugins/marketplaces/<marketplace>/.claude-plugin/
// marketplace.json names the plugin's source directory. The directory, with symlinks
// resolved, must lie inside the marketplaces root (also resolved), else the error wraps
// ErrOutsideRoot. server.ts must exist there and mention handleInbound.
func Resolve(claudeHome, settingsPath string) (Target, error) {
	if claudeHome == "" {
		return Target{}, errors.New("plugin: claude home is not set (claude.home)")
	}
	if settingsPath == "" {
		return Target{}, errors.New("plugin: secretary settings path is not set (claude.settings)")
	}
	marketplace, err := enabledMarketplace(settingsPath)
	if err != nil {
		return Target{}, err
	}
	t := Target{
		Marketplace:  marketplace,
		SettingsPath: settingsPath,
		CacheRoot:    filepath.Join(claudeHome, "plugins", "cache", marketplace, pluginName),
	}
	root := filepath.Join(claudeHome, "plugins", "marketplaces")
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return Target{}, fmt.Errorf("plugin: marketplaces root %s: %w", root, err)
	}
	if rootReal, err = filepath.Abs(rootReal); err != nil {
		return Target{}, fmt.Errorf("plugin: marketplaces root %s: %w", root, err)
	}
	t.MarketplacesRoot = rootReal

	mpDir := filepath.Join(rootReal, marketplace)
	mpReal, err := filepath.EvalSymlinks(mpDir)
	if err != nil {
		return Target{}, fmt.Errorf("plugin: marketplace %q (enabled in %s): %w", marketplace, settingsPath, err)
	}
	if !within(rootReal, mpReal) {
		return Target{}, fmt.Errorf("%w: marketplace directory %s resolves to %s, outside %s", ErrOutsideRoot, mpDir, mpReal, rootReal)
	}
	t.MarketplaceJSON = filepath.Join(mpReal, ".claude-plugin", "marketplace.json")
	source, err := pluginSource(t.MarketplaceJSON)
	if err != nil {
		return Target{}, err
	}

	dir := source
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(mpReal, source)
	}
	dirReal, err := filepath.EvalSymlinks(dir)
	if err != nil {
		// A missing directory reached through ".." is still a traversal attempt: say so.
		if !within(rootReal, filepath.Clean(dir)) {
			return Target{}, fmt.Errorf("%w: plugin source %q in %s points to %s, outside %s", ErrOutsideRoot, source, t.MarketplaceJSON, dir, rootReal)
		}
		return Target{}, fmt.Errorf("plugin: source %q in %s: %w", source, t.MarketplaceJSON, err)
	}
	if !within(rootReal, dirReal) {
		return Target{}, fmt.Errorf("%w: plugin source %q in %s resolves to %s, outside %s", ErrOutsideRoot, source, t.MarketplaceJSON, dirReal, rootReal)
	}
	if info, err := os.Stat(dirReal); err != nil {
		return Target{}, fmt.Errorf("plugin: plugin directory %s: %w", dirReal, err)
	} else if !info.IsDir() {
		return Target{}, fmt.Errorf("plugin: plugin source %q in %s is not a directory (%s)", source, t.MarketplaceJSON, dirReal)
	}
	t.PluginDir = dirReal

	ts := filepath.Join(dirReal, "server.ts")
	tsReal, err := filepath.EvalSymlinks(ts)
	if err != nil {
		return Target{}, fmt.Errorf("plugin: server.ts of the telegram plugin: %w", err)
	}
	if !within(rootReal, tsReal) {
		return Target{}, fmt.Errorf("%w: %s resolves to %s, outside %s", ErrOutsideRoot, ts, tsReal, rootReal)
	}
	src, _, err := readLimited(tsReal, MaxServerTSBytes, "plugin: server.ts")
	if err != nil {
		return Target{}, err
	}
	if !bytes.Contains(src, []byte("handleInbound")) {
		return Target{}, fmt.Errorf("plugin: %s has no handleInbound: not the Telegram plugin's server", tsReal)
	}
	t.ServerTS = tsReal
	return t, nil
}

// enabledMarketplace returns <marketplace> of the one enabled "telegram@<marketplace>" key.
func enabledMarketplace(settingsPath string) (string, error) {
	data, _, err := readLimited(settingsPath, MaxJSONBytes, "plugin: settings")
	if err != nil {
		return "", err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return "", fmt.Errorf("plugin: settings %s is not a JSON object", settingsPath)
	}
	raw, ok := top["enabledPlugins"]
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("%w: %s has no enabledPlugins", ErrNotEnabled, settingsPath)
	}
	var plugins map[string]json.RawMessage
	if err := json.Unmarshal(raw, &plugins); err != nil || plugins == nil {
		return "", fmt.Errorf("plugin: settings %s: enabledPlugins is not a JSON object", settingsPath)
	}
	var found []string
	for key, val := range plugins {
		name, marketplace, ok := strings.Cut(key, "@")
		if !ok || name != pluginName {
			continue
		}
		var on bool
		if err := json.Unmarshal(val, &on); err != nil {
			return "", fmt.Errorf("plugin: settings %s: enabledPlugins[%q] is not true or false", settingsPath, key)
		}
		if !marketplaceNameRE.MatchString(marketplace) || strings.Contains(marketplace, "..") {
			return "", fmt.Errorf("plugin: settings %s: enabledPlugins key %q has an invalid marketplace name (letters, digits, '.', '_', '-'; no path separators or '..')", settingsPath, key)
		}
		if on {
			found = append(found, marketplace)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: %s enables no %s@<marketplace>", ErrNotEnabled, settingsPath, pluginName)
	case 1:
		return found[0], nil
	default:
		sort.Strings(found)
		return "", fmt.Errorf("plugin: settings %s enables %s from several marketplaces (%s); enable one", settingsPath, pluginName, strings.Join(found, ", "))
	}
}

// pluginSource returns the source path of the telegram plugin in marketplace.json: relative
// to the marketplace directory (or absolute), never a remote source.
func pluginSource(path string) (string, error) {
	data, _, err := readLimited(path, MaxJSONBytes, "plugin: marketplace.json")
	if err != nil {
		return "", err
	}
	var mp struct {
		Plugins  []json.RawMessage `json:"plugins"`
		Metadata *struct {
			PluginRoot *string `json:"pluginRoot"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &mp); err != nil {
		return "", fmt.Errorf("plugin: marketplace.json %s is not a JSON object with a plugins list", path)
	}
	var entry *struct {
		Name   string          `json:"name"`
		Source json.RawMessage `json:"source"`
	}
	for _, raw := range mp.Plugins {
		var p struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Name != pluginName {
			continue // other plugins' entries are none of our business
		}
		if entry != nil {
			return "", fmt.Errorf("plugin: marketplace.json %s lists %q twice", path, pluginName)
		}
		entry = &p
	}
	if entry == nil {
		return "", fmt.Errorf("plugin: marketplace.json %s has no plugin named %q", path, pluginName)
	}

	var source string
	if err := json.Unmarshal(entry.Source, &source); err == nil {
		if source == "" {
			return "", fmt.Errorf("plugin: marketplace.json %s: %s has an empty source", path, pluginName)
		}
		// metadata.pluginRoot is prepended to bare relative sources ("telegram").
		if mp.Metadata != nil && mp.Metadata.PluginRoot != nil && !filepath.IsAbs(source) &&
			!strings.HasPrefix(source, "./") && !strings.HasPrefix(source, "../") {
			source = filepath.Join(*mp.Metadata.PluginRoot, source)
		}
		return checkSourceText(path, source)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(entry.Source, &obj); err != nil || obj == nil {
		return "", fmt.Errorf("plugin: marketplace.json %s: source of %s is neither a path nor an object", path, pluginName)
	}
	var kind string
	if raw, ok := obj["source"]; ok {
		_ = json.Unmarshal(raw, &kind)
	}
	switch kind {
	case "local", "directory", "relative", "path":
		var p string
		if err := json.Unmarshal(obj["path"], &p); err != nil || p == "" {
			return "", fmt.Errorf("plugin: marketplace.json %s: %s source %q has no path", path, pluginName, kind)
		}
		return checkSourceText(path, p)
	case "":
		return "", fmt.Errorf("%w: marketplace.json %s: source object of %s has no \"source\" kind", ErrUnsupportedSource, path, pluginName)
	default:
		return "", fmt.Errorf("%w: marketplace.json %s installs %s from a %q source; only a directory inside the marketplace can be patched (remote sources run from the plugin cache)", ErrUnsupportedSource, path, pluginName, kind)
	}
}

// checkSourceText refuses source strings that cannot be a directory path.
func checkSourceText(path, source string) (string, error) {
	if strings.ContainsRune(source, 0) || strings.Contains(source, "://") {
		return "", fmt.Errorf("%w: marketplace.json %s: source %q of %s is not a directory path", ErrUnsupportedSource, path, source, pluginName)
	}
	return source, nil
}
