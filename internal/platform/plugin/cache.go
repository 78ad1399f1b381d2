package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// V1Marker marks the old v1 patch (a Bun.spawn of record-intent.sh) that earlier scripts
// left in the plugin cache. Its first line is
// "// INTENT_RECORDING_PATCH — safety net: record to intents DB before MCP delivery".
const V1Marker = "INTENT_RECORDING_PATCH"

// Bounds of a plausible v1 block, in bytes; a span outside them aborts the cleanup.
const (
	MinV1Bytes = 50
	MaxV1Bytes = 1000
)

// CleanV1Cache removes the old v1 block from server.ts of the newest version directory in
// t.CacheRoot (names starting with a digit, in version order like `sort -V`). The block runs
// from the line starting "// INTENT_RECORDING_PATCH" through the line holding an explicit end
// marker (a later line with INTENT_RECORDING_PATCH and END), or, without one, through the
// first following line that is just "}". One block is removed per call. A span under
// MinV1Bytes or over MaxV1Bytes aborts with ErrSuspiciousV1Span, writing nothing. No cache,
// no version directory, no server.ts or no v1 block: no change. The file is backed up,
// written atomically and checked with bun like Patch; it must lie inside the plugin cache, and
// every read and write goes through the cache's root (a link out of it is refused).
func CleanV1Cache(t Target, opts PatchOptions) (Result, error) {
	var res Result
	ct, ok, err := CacheTarget(t)
	if err != nil || !ok {
		return res, err
	}
	file, err := openPlace(ct.MarketplacesRoot, ct.ServerTS)
	if err != nil {
		return res, err
	}
	defer file.close()
	res.File = file.path

	src, mode, err := file.read(MaxServerTSBytes, "plugin: cached server.ts")
	if err != nil {
		return res, err
	}
	out, removed, err := removeV1(string(src), file.path)
	if err != nil || removed == 0 {
		return res, err
	}
	bun, err := FindBun(opts.Bun)
	if err != nil {
		return res, fmt.Errorf("plugin: cannot check the syntax of %s: %w", file.path, err)
	}
	if err := writeChecked(file, "telegram-cache", src, []byte(out), mode, bun, opts, &res); err != nil {
		return res, err
	}
	got, _, err := file.read(MaxServerTSBytes, "plugin: cached server.ts")
	if err != nil || string(got) != out {
		return res, fmt.Errorf("%w: %s does not read back as written", ErrNotVerified, file.path)
	}
	res.RemovedBytes = removed
	return res, nil
}

// CacheTarget is the copy of the plugin Claude Code installed and runs: server.ts of the newest
// version directory in t.CacheRoot (names starting with a digit, in version order like
// `sort -V`), as a Target confined to <claude home>/plugins/cache. ok is false when there is no
// cache, no version directory or no server.ts; a server.ts that is not a regular file, or that
// resolves outside the cache, is an error.
func CacheTarget(t Target) (Target, bool, error) {
	if t.CacheRoot == "" {
		return Target{}, false, errors.New("plugin: target has no cache root (use Resolve)")
	}
	entries, err := os.ReadDir(t.CacheRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return Target{}, false, nil
	}
	if err != nil {
		return Target{}, false, fmt.Errorf("plugin: plugin cache %s: %w", t.CacheRoot, err)
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "" && e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) == 0 {
		return Target{}, false, nil
	}
	sort.Slice(versions, func(i, j int) bool { return versionLess(versions[i], versions[j]) })
	file := filepath.Join(t.CacheRoot, versions[len(versions)-1], "server.ts")
	info, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Target{}, false, nil
	}
	if err != nil {
		return Target{}, false, fmt.Errorf("plugin: cached server.ts: %w", err)
	}
	if !info.Mode().IsRegular() {
		return Target{}, false, fmt.Errorf("plugin: cached %s is not a regular file (symlink?); not touching it", file)
	}
	// The cache root itself may be reached through symlinks: the file must stay inside
	// <claude home>/plugins/cache.
	cacheBase := filepath.Dir(filepath.Dir(t.CacheRoot))
	baseReal, err := filepath.EvalSymlinks(cacheBase)
	if err != nil {
		return Target{}, false, fmt.Errorf("plugin: plugin cache %s: %w", cacheBase, err)
	}
	fileReal, err := filepath.EvalSymlinks(file)
	if err != nil {
		return Target{}, false, fmt.Errorf("plugin: cached server.ts: %w", err)
	}
	if !within(baseReal, fileReal) {
		return Target{}, false, fmt.Errorf("%w: cached %s resolves to %s, outside %s", ErrOutsideRoot, file, fileReal, baseReal)
	}
	ct := t
	ct.ServerTS, ct.PluginDir, ct.MarketplacesRoot = fileReal, filepath.Dir(fileReal), baseReal
	return ct, true, nil
}

// removeV1 removes the first v1 block from src; removed is 0 when there is none.
func removeV1(src, file string) (out string, removed int, err error) {
	lines := splitLines(src)
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "// "+V1Marker) && !isV1End(l) {
			start = i
			break
		}
	}
	if start < 0 {
		return src, 0, nil
	}
	end := -1
	for i := start + 1; i < len(lines); i++ {
		if strings.Contains(lines[i], V1Marker) {
			if isV1End(lines[i]) {
				end = i
			}
			break // the next marker line ends the search either way
		}
	}
	if end < 0 {
		for i := start + 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "}" {
				end = i
				break
			}
		}
	}
	if end < 0 {
		return "", 0, fmt.Errorf("%w: %s has %q at line %d but no end of the block; not touching it", ErrSuspiciousV1Span, file, V1Marker, start+1)
	}
	span := 0
	for _, l := range lines[start : end+1] {
		span += len(l)
	}
	if span < MinV1Bytes || span > MaxV1Bytes {
		return "", 0, fmt.Errorf("%w: the v1 block in %s (lines %d-%d) is %d bytes, outside %d-%d; not touching it", ErrSuspiciousV1Span, file, start+1, end+1, span, MinV1Bytes, MaxV1Bytes)
	}
	var b strings.Builder
	for _, l := range lines[:start] {
		b.WriteString(l)
	}
	for _, l := range lines[end+1:] {
		b.WriteString(l)
	}
	return b.String(), span, nil
}

// isV1End reports whether a line is an explicit end marker of the v1 block.
func isV1End(line string) bool {
	return strings.Contains(line, V1Marker) && strings.Contains(line, "END")
}

// versionLess orders names like `sort -V`: runs of digits compare as numbers, other runs as
// text; equal versions fall back to the plain string order.
func versionLess(a, b string) bool {
	x, y := a, b
	for x != "" && y != "" {
		xd, yd := isDigit(x[0]), isDigit(y[0])
		if xd != yd {
			return xd // a number sorts before text at the same position
		}
		xr, yr := leadingRun(x, xd), leadingRun(y, yd)
		x, y = x[len(xr):], y[len(yr):]
		if xd {
			xr, yr = strings.TrimLeft(xr, "0"), strings.TrimLeft(yr, "0")
			if len(xr) != len(yr) {
				return len(xr) < len(yr)
			}
		}
		if xr != yr {
			return xr < yr
		}
	}
	if x != y {
		return x == ""
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// leadingRun returns the leading run of digits (digits true) or non-digits of s.
func leadingRun(s string, digits bool) string {
	i := 0
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i]
}
