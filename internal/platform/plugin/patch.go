package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Markers and anchor of the patch.
const (
	// BeginMarker starts the BEGIN line of intentq's block; the line goes on with the block's
	// version ("// BEGIN intentq ingest v2 ..."), so an older block is recognised and replaced.
	BeginMarker = "// BEGIN intentq ingest"
	// EndMarker is the block's last line.
	EndMarker = "// END intentq ingest"
	// BlockVersion is the version written into the BEGIN line: 3 spools before it posts,
	// reads the token from a file and records errors; its canary records that it runs.
	BlockVersion = 3
	// CanaryBegin and CanaryEnd mark the canary at the end of server.ts.
	CanaryBegin = "// BEGIN intentq canary"
	CanaryEnd   = "// END intentq canary"
	// Anchor is the comment in handleInbound that the block goes right before; it must occur
	// exactly once in server.ts. Every version of the plugin so far has it.
	Anchor = "// image_path goes in meta only"
	// IngestPath is the ingest endpoint the block posts to.
	IngestPath = "/v1/intents"
)

// IngestURL turns ingest.listen (host:port) into the URL of the ingest endpoint on loopback.
// A wildcard or empty host becomes 127.0.0.1; any other host must be a loopback address or
// localhost.
func IngestURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("plugin: ingest.listen %q is not host:port", listen)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	u := "http://" + net.JoinHostPort(host, port) + IngestPath
	if _, err := checkIngestURL(u); err != nil {
		return "", err
	}
	return u, nil
}

// checkIngestURL accepts only http(s) URLs to a loopback host: the message text must never
// leave the machine. It returns the URL in canonical form.
func checkIngestURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("plugin: ingest URL is not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("plugin: ingest URL %s must be http:// (to 127.0.0.1 or localhost)", u.Redacted())
	}
	if u.User != nil || u.Opaque != "" || u.Fragment != "" || u.RawQuery != "" {
		return "", fmt.Errorf("plugin: ingest URL %s must be a plain http://host:port/path URL", u.Redacted())
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("plugin: ingest URL %s is not on loopback (127.0.0.1, ::1 or localhost); message text must not leave the machine", u.Redacted())
	}
	if p := u.Port(); p != "" {
		for _, r := range p {
			if r < '0' || r > '9' {
				return "", fmt.Errorf("plugin: ingest URL %s has a bad port", u.Redacted())
			}
		}
	}
	return u.String(), nil
}

// Blocks are what Patch puts into server.ts: the ingest block before the anchor in
// handleInbound, and the canary at the end of the file (it runs when the plugin starts).
type Blocks struct {
	Ingest string
	Canary string
}

// Files are where the patched plugin finds the ingest token and puts what it spools.
type Files struct {
	// TokenFile holds the ingest token (0600); the block reads it at run time, so the token
	// is never written into server.ts.
	TokenFile string
	// SpoolDir receives every message before it is posted (spool-<pid>.jsonl) and the canary
	// and error records (events.jsonl).
	SpoolDir string
}

// Block returns the blocks Patch inserts, without indentation (Patch indents the ingest block
// like the anchor line), each ending in a newline.
//
// The ingest block first appends the message {chat_id, message_id, text, user, ts} as one JSON
// line to the plugin process's own spool file, synchronously (one write per line, so processes
// never interleave), then posts it to ingestURL with the token read from the token file,
// fire-and-forget. It never throws: an exception (a name renamed upstream, a full disk) becomes
// an error record with the message's IDs. The canary records, when the plugin starts, that the
// patched block is loaded and which file runs. URL and paths are embedded as JSON string
// literals; ingestURL must be an http(s) URL to a loopback host, the paths absolute.
func Block(ingestURL string, f Files) (Blocks, error) {
	u, err := checkIngestURL(ingestURL)
	if err != nil {
		return Blocks{}, err
	}
	for name, p := range map[string]string{"token file": f.TokenFile, "spool dir": f.SpoolDir} {
		if !filepath.IsAbs(p) || strings.ContainsFunc(p, unicode.IsControl) {
			return Blocks{}, fmt.Errorf("plugin: the %s %q must be an absolute path without control characters", name, p)
		}
	}
	lit := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	spool, events := lit(f.SpoolDir+"/"), lit(filepath.Join(f.SpoolDir, "events.jsonl"))
	var b strings.Builder
	fmt.Fprintf(&b, "%s v%d: records every inbound message in intentq before Claude sees it. Managed by intentq; do not edit.\n", BeginMarker, BlockVersion)
	b.WriteString("try {\n")
	b.WriteString("  if (msgId != null) {\n")
	b.WriteString("    const iqFs = require('node:fs')\n")
	b.WriteString("    const iqBody = JSON.stringify({\n")
	b.WriteString("      chat_id,\n")
	b.WriteString("      message_id: String(msgId),\n")
	b.WriteString("      text: text ?? '',\n")
	b.WriteString("      user: from?.username ?? String(from?.id ?? ''),\n")
	b.WriteString("      ts: (typeof ctx !== 'undefined' && ctx?.message?.date) || Math.floor(Date.now() / 1000),\n")
	b.WriteString("    })\n")
	b.WriteString("    // The spool first: a message is on disk before anything else can fail.\n")
	fmt.Fprintf(&b, "    iqFs.mkdirSync(%s, { recursive: true, mode: 0o700 })\n", spool)
	fmt.Fprintf(&b, "    iqFs.appendFileSync(%s + 'spool-' + process.pid + '.jsonl', iqBody + '\\n', { mode: 0o600 })\n", spool)
	b.WriteString("    let iqToken = ''\n")
	fmt.Fprintf(&b, "    try { iqToken = String(iqFs.readFileSync(%s, 'utf8')).trim() } catch {}\n", lit(f.TokenFile))
	b.WriteString("    if (iqToken) {\n")
	fmt.Fprintf(&b, "      void fetch(%s, {\n", lit(u))
	b.WriteString("        method: 'POST',\n")
	b.WriteString("        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + iqToken },\n")
	b.WriteString("        body: iqBody,\n")
	b.WriteString("        signal: AbortSignal.timeout(10_000),\n")
	b.WriteString("      }).then(res => {\n")
	b.WriteString("        if (!res.ok) process.stderr.write(`intentq: ingest answered ${res.status} for message ${msgId}; it waits in the spool\\n`)\n")
	b.WriteString("      }).catch(err => {\n")
	b.WriteString("        try { process.stderr.write(`intentq: ingest unreachable for message ${msgId}; it waits in the spool: ${err}\\n`) } catch {}\n")
	b.WriteString("      })\n")
	b.WriteString("    }\n")
	b.WriteString("  }\n")
	b.WriteString("} catch (iqErr) {\n")
	b.WriteString("  try {\n")
	fmt.Fprintf(&b, "    require('node:fs').appendFileSync(%s, JSON.stringify({\n", events)
	b.WriteString("      kind: 'error', at: new Date().toISOString(), pid: process.pid,\n")
	b.WriteString("      chat_id: typeof chat_id !== 'undefined' ? chat_id : null,\n")
	b.WriteString("      message_id: typeof msgId !== 'undefined' && msgId != null ? String(msgId) : null,\n")
	b.WriteString("      error: String(iqErr),\n")
	b.WriteString("    }) + '\\n', { mode: 0o600 })\n")
	b.WriteString("  } catch {}\n")
	b.WriteString("}\n")
	b.WriteString(EndMarker + "\n")

	var c strings.Builder
	fmt.Fprintf(&c, "%s v%d: tells intentq that this copy of the plugin runs, patched. Managed by intentq; do not edit.\n", CanaryBegin, BlockVersion)
	c.WriteString("try {\n")
	fmt.Fprintf(&c, "  require('node:fs').mkdirSync(%s, { recursive: true, mode: 0o700 })\n", spool)
	fmt.Fprintf(&c, "  require('node:fs').appendFileSync(%s, JSON.stringify({ kind: 'loaded', at: new Date().toISOString(), pid: process.pid, file: import.meta.path, version: %d }) + '\\n', { mode: 0o600 })\n", events, BlockVersion)
	c.WriteString("} catch {}\n")
	c.WriteString(CanaryEnd + "\n")
	return Blocks{Ingest: b.String(), Canary: c.String()}, nil
}

// checkBlock makes sure the ingest block is one marked block that cannot be confused with the
// anchor, and the canary one marked canary block.
func checkBlock(bl Blocks) error {
	if err := checkMarked(bl.Ingest, BeginMarker, EndMarker); err != nil {
		return err
	}
	if strings.Contains(bl.Ingest, Anchor) || strings.Contains(bl.Canary, Anchor) {
		return errors.New("plugin: a block must not hold the anchor")
	}
	return checkMarked(bl.Canary, CanaryBegin, CanaryEnd)
}

// checkMarked makes sure block starts with its begin line, ends with its end line and holds
// each exactly once.
func checkMarked(block, begin, end string) error {
	lines := splitLines(block)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], begin) ||
		strings.TrimRight(lines[len(lines)-1], "\r\n") != end {
		return fmt.Errorf("plugin: block must start with the %q line and end with the %q line", begin, end)
	}
	begins, ends := 0, 0
	for _, l := range lines {
		tl := strings.TrimSpace(l)
		if strings.HasPrefix(tl, begin) {
			begins++
		}
		if strings.HasPrefix(tl, end) {
			ends++
		}
	}
	if begins != 1 || ends != 1 {
		return fmt.Errorf("plugin: block must hold exactly one %q and one %q line", begin, end)
	}
	return nil
}

// plan computes what server.ts (src, named file) should look like with block in place: any
// existing intentq block is removed and block is inserted right before the anchor line,
// indented like it. It also reports the state src is in.
func plan(src []byte, bl Blocks, file string) ([]byte, string, error) {
	lines, hadCanary, err := withoutCanary(splitLines(string(src)), file)
	if err != nil {
		return nil, "", err
	}
	begin, end, err := findMarked(lines, BeginMarker, EndMarker, file)
	if err != nil {
		return nil, "", err
	}
	state := StateUnpatched
	base := lines
	if begin >= 0 || hadCanary {
		state = StateOutdated
	}
	if begin >= 0 {
		base = append(append([]string{}, lines[:begin]...), lines[end+1:]...)
	}
	if err := checkBindings(strings.Join(base, ""), file); err != nil {
		return nil, "", err
	}

	anchor, count := -1, 0
	for i, l := range base {
		if n := strings.Count(l, Anchor); n > 0 {
			count += n
			anchor = i
		}
	}
	switch {
	case count == 0:
		return nil, "", fmt.Errorf("%w: no anchor %q in %s", ErrAnchor, Anchor, file)
	case count > 1:
		return nil, "", fmt.Errorf("%w: anchor %q found %d times in %s", ErrAnchor, Anchor, count, file)
	}
	al := base[anchor]
	indent := al[:len(al)-len(strings.TrimLeft(al, " \t"))]
	eol := "\n"
	if strings.HasSuffix(al, "\r\n") {
		eol = "\r\n"
	}

	var out strings.Builder
	out.Grow(len(src) + len(bl.Ingest) + len(bl.Canary) + 256)
	for _, l := range base[:anchor] {
		out.WriteString(l)
	}
	for _, l := range splitLines(bl.Ingest) {
		l = strings.TrimRight(l, "\r\n")
		if l != "" {
			out.WriteString(indent)
			out.WriteString(l)
		}
		out.WriteString(eol)
	}
	for _, l := range base[anchor:] {
		out.WriteString(l)
	}
	// The canary goes last, at the top level: it runs when the plugin starts.
	if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") {
		out.WriteString(eol)
	}
	for _, l := range splitLines(bl.Canary) {
		out.WriteString(strings.TrimRight(l, "\r\n"))
		out.WriteString(eol)
	}
	if state == StateOutdated && out.String() == string(src) {
		state = StatePatched
	}
	return []byte(out.String()), state, nil
}

// withoutCanary removes intentq's canary block from lines and reports whether there was one.
func withoutCanary(lines []string, file string) ([]string, bool, error) {
	begin, end, err := findMarked(lines, CanaryBegin, CanaryEnd, file)
	if err != nil || begin < 0 {
		return lines, false, err
	}
	return append(append([]string{}, lines[:begin]...), lines[end+1:]...), true, nil
}

// findMarked finds the lines of the block marked by begin and end: (-1, -1) when there is
// none; a repeated, stray or unclosed marker is ErrMalformedBlock.
func findMarked(lines []string, beginMarker, endMarker, file string) (begin, end int, err error) {
	begin, end = -1, -1
	for i, l := range lines {
		tl := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(tl, beginMarker):
			if begin >= 0 {
				return -1, -1, fmt.Errorf("%w: %s has more than one %q line; fix it by hand or restore the plugin", ErrMalformedBlock, file, beginMarker)
			}
			begin = i
		case strings.HasPrefix(tl, endMarker):
			if end >= 0 || begin < 0 {
				return -1, -1, fmt.Errorf("%w: %s has a stray %q line (line %d)", ErrMalformedBlock, file, endMarker, i+1)
			}
			end = i
		}
	}
	if begin >= 0 && end < 0 {
		return -1, -1, fmt.Errorf("%w: %s has %q (line %d) without %q", ErrMalformedBlock, file, beginMarker, begin+1, endMarker)
	}
	return begin, end, nil
}

// State reports whether t.ServerTS holds block before the anchor (StatePatched), an other
// intentq block (StateOutdated) or none (StateUnpatched), for doctor and the watchdog.
// A file that Patch would refuse (no anchor, two anchors, broken markers) is an error.
func State(t Target, block Blocks) (string, error) {
	if err := checkBlock(block); err != nil {
		return "", err
	}
	file, err := checkTarget(t)
	if err != nil {
		return "", err
	}
	defer file.close()
	src, _, err := file.read(MaxServerTSBytes, "plugin: server.ts")
	if err != nil {
		return "", err
	}
	_, state, err := plan(src, block, file.path)
	return state, err
}

// Patch puts block (from Block) into t.ServerTS right before the anchor line, replacing an
// older intentq block. When the file already holds exactly this block nothing is written
// (Changed false). Otherwise it backs the file up, writes it atomically (same mode), checks
// the syntax with `bun build --no-bundle` (restoring the backup byte for byte on failure,
// error wraps ErrBunFailed), and re-reads the file to verify the BEGIN marker is there exactly
// once. A file without the anchor, with it twice, or with broken markers is not touched. Every
// read and write goes through the marketplaces root: a link out of it, swapped in at any time,
// is refused (ErrOutsideRoot).
func Patch(t Target, block Blocks, opts PatchOptions) (Result, error) {
	res := Result{File: t.ServerTS}
	if err := checkBlock(block); err != nil {
		return res, err
	}
	file, err := checkTarget(t)
	if err != nil {
		return res, err
	}
	defer file.close()
	res.File = file.path
	src, mode, err := file.read(MaxServerTSBytes, "plugin: server.ts")
	if err != nil {
		return res, err
	}
	out, state, err := plan(src, block, file.path)
	res.Before = state
	if err != nil {
		return res, err
	}
	if state == StatePatched {
		return res, verify(file, out)
	}
	bun, err := FindBun(opts.Bun)
	if err != nil {
		return res, fmt.Errorf("plugin: cannot check the syntax of %s: %w", file.path, err)
	}
	if err := writeChecked(file, "telegram", src, out, mode, bun, opts, &res); err != nil {
		return res, err
	}
	return res, verify(file, out)
}

// checkTarget re-resolves t.ServerTS right before use (a link swapped in after Resolve that
// leads out of the marketplaces root is refused here, naming it), and opens the root the
// patch then reads and writes through (a link swapped in later is refused there).
func checkTarget(t Target) (*place, error) {
	if t.ServerTS == "" || t.MarketplacesRoot == "" {
		return nil, errors.New("plugin: target is incomplete (use Resolve)")
	}
	resolved, err := filepath.EvalSymlinks(t.ServerTS)
	if err != nil {
		return nil, fmt.Errorf("plugin: server.ts: %w", err)
	}
	if !within(t.MarketplacesRoot, resolved) {
		return nil, fmt.Errorf("%w: %s resolves to %s, outside %s", ErrOutsideRoot, t.ServerTS, resolved, t.MarketplacesRoot)
	}
	return openPlace(t.MarketplacesRoot, resolved)
}

// writeChecked backs up src, writes out to file and has bun check it; on a failed check it
// restores src and returns an error wrapping ErrBunFailed.
func writeChecked(file *place, tag string, src, out []byte, mode os.FileMode, bun string, opts PatchOptions, res *Result) error {
	bk, err := backup(file, src, opts, tag)
	if err != nil {
		return fmt.Errorf("plugin: %w (nothing written)", err)
	}
	res.Backup = bk
	if err := file.write(out, mode); err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	res.Changed = true
	output, err := bunCheck(bun, file.path, opts.BunTimeout)
	if err == nil {
		return nil
	}
	if rerr := restore(file, src, mode); rerr != nil {
		return fmt.Errorf("%w on %s (%v), and restoring it failed: %v; the backup is %s\n%s", ErrBunFailed, file.path, err, rerr, bk, output)
	}
	res.Changed = false
	note := ""
	if _, err2 := bunCheck(bun, file.path, opts.BunTimeout); err2 != nil {
		note = " (the original file fails the check too: is bun too old?)"
	}
	return fmt.Errorf("%w on %s (%v); restored the original from %s%s\n%s", ErrBunFailed, file.path, err, bk, note, output)
}

// restore writes src back and checks it reads back byte for byte.
func restore(file *place, src []byte, mode os.FileMode) error {
	if err := file.write(src, mode); err != nil {
		return err
	}
	got, _, err := file.read(MaxServerTSBytes, "restored server.ts")
	if err != nil {
		return err
	}
	if string(got) != string(src) {
		return fmt.Errorf("%s does not read back as the original", file.path)
	}
	return nil
}

// verify re-reads file (the one bun runs) and checks it is what was written, with the BEGIN
// marker exactly once.
func verify(file *place, want []byte) error {
	got, _, err := file.read(MaxServerTSBytes, "plugin: verify server.ts")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotVerified, err)
	}
	n := 0
	for _, l := range splitLines(string(got)) {
		if strings.HasPrefix(strings.TrimSpace(l), BeginMarker) {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: %s holds the %q marker %d times after patching", ErrNotVerified, file.path, BeginMarker, n)
	}
	if string(got) != string(want) {
		return fmt.Errorf("%w: %s changed while it was being patched; run the patch again", ErrNotVerified, file.path)
	}
	return nil
}
