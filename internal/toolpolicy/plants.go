package toolpolicy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// PlantNames are the names through which a file a headless run leaves in a folder makes a later
// program of the person's run code, or read instructions (issue 61, item 3): HEAD (git takes a
// folder with a HEAD, objects/ and refs/ for a repository and runs what its config names, e.g.
// core.fsmonitor on the person's next git status there; without a HEAD it takes none), .git,
// direnv's .envrc, editor settings (.vscode tasks, .idea run configurations), hook folders
// (.husky, .githooks) and pre-commit's config, the agent CLIs' project settings and MCP servers
// (.claude, .mcp.json, .codex, .gemini, .copilot) and their instructions (CLAUDE.md,
// CLAUDE.local.md, AGENTS.md, GEMINI.md), and, for a work folder of ~, the shells' start files
// and git's own config. A path is a plant when any of its names is one, at any
// depth (IsPlant).
var PlantNames = []string{
	"HEAD", ".git",
	".envrc", ".vscode", ".idea",
	".husky", ".githooks", ".pre-commit-config.yaml",
	".claude", ".mcp.json", ".codex", ".gemini", ".copilot",
	"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md",
	// A work folder of ~: the shells' start files and git's own config run programs too.
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".gitconfig",
	".devcontainer", ".cursor",
}

// IsPlant reports whether a path relative to a work folder (a single name too) is a plant or lies
// in one: whether any of its names is one of PlantNames. Names compare as a case-insensitive file
// system may take them: case folded, a trailing dot or blank and invisible format characters
// (zero-width joiners, direction marks) ignored, so ".GIT" and ".git." are .git.
func IsPlant(rel string) bool {
	for _, name := range strings.Split(filepath.ToSlash(rel), "/") {
		if plantName(name) != "" {
			return true
		}
	}
	return false
}

// plantName returns the name of PlantNames a folder or file name stands for, or "".
func plantName(name string) string {
	n := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	n = strings.TrimRight(n, ". ")
	for _, p := range PlantNames {
		if strings.EqualFold(n, p) {
			return p
		}
	}
	return ""
}

// checkPlant refuses a write to p (absolute) that plants a program for the person: a path with
// one of PlantNames in it (below the work folder when p lies there, anywhere otherwise), or a
// path inside a folder with a HEAD (a repository's own folder, whose config and hooks git runs).
func (g Guard) checkPlant(tool, p string) error {
	rel := p
	if within(p, g.Dir) {
		if r, err := filepath.Rel(g.Dir, p); err == nil {
			rel = r
		}
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		switch plantName(name) {
		case "":
		case "HEAD":
			return fmt.Errorf("toolpolicy: %s writes %s: a file named HEAD makes its folder a git repository, "+
				"whose config runs programs: no headless run writes one", tool, rel)
		default:
			return fmt.Errorf("toolpolicy: %s writes %s, where git, an editor or an agent CLI finds programs to run "+
				"or instructions to follow: no headless run writes there", tool, rel)
		}
	}
	if repo := headAbove(p); repo != "" {
		return fmt.Errorf("toolpolicy: %s writes %s inside %s, which has a HEAD: git takes that folder for a repository, "+
			"whose config and hooks run programs: no headless run writes there", tool, rel, repo)
	}
	return nil
}

// headAbove returns the nearest folder above p that holds an entry named HEAD, or "".
func headAbove(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, "HEAD")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// shellWriters are programs whose arguments name the files and folders they create or change: all
// of them count, sources too (cp, mv and ln put a file into a folder under its own name; wget and
// curl -O under the last name of its address).
var shellWriters = map[string]bool{
	"touch": true, "mkdir": true, "cp": true, "mv": true, "ln": true, "link": true, "install": true,
	"tee": true, "truncate": true, "dd": true, "rsync": true, "chmod": true, "chown": true,
	"chgrp": true, "mktemp": true, "mkfifo": true, "mknod": true, "tar": true, "wget": true,
	"curl": true,
}

// checkShellWrites refuses a shell command of a run whose policy does not allow everything when it
// writes a plant (checkPlant): through a writer's arguments (shellWriters, sed -i, git mv), an
// output option (-o FILE, --output=FILE) or a redirection, or when it creates a repository or
// writes files whose names the guard cannot see (shellWrites). Other programs a policy allows
// may write anything: the guard sees only these.
func (g Guard) checkShellWrites(tool string, p shellPaths, base string) error {
	var targets []string
	moves := false
	for _, view := range p.views {
		v, by := unwrapBy(view)
		if len(v) == 0 {
			continue
		}
		moves = moves || changesFolder(view, v, by)
		t, writer, why := shellWrites(v)
		switch {
		case why != "":
			return fmt.Errorf("toolpolicy: %s: %s: no headless run does that", tool, why)
		case writer && contains(by, "xargs"):
			return fmt.Errorf("toolpolicy: %s: xargs %s writes what its input names, which the guard cannot see: name the files", tool, v[0])
		}
		targets = append(targets, t...)
	}
	targets = append(targets, p.outputs...)
	if len(targets) > 0 && moves {
		return fmt.Errorf("toolpolicy: %s writes after changing folders (cd, -C), so the guard cannot tell where: write from the work folder", tool)
	}
	for _, w := range targets {
		for _, c := range writeCandidates(w) {
			e, ok := g.expand(c, base)
			if !ok || safeDevices[e] {
				continue // refused as unproven unless the policy allows everything
			}
			if !filepath.IsAbs(e) {
				e = base + string(filepath.Separator) + e
			}
			if err := g.checkPlant(tool, filepath.Clean(e)); err != nil {
				return err
			}
			if err := g.checkPlant(tool, realPath(e)); err != nil {
				return err
			}
		}
		for _, pattern := range p.globs[w] {
			_, found, err := g.globPaths(pattern, base, true)
			if err != nil {
				return fmt.Errorf("toolpolicy: %s: %w: %v: call refused (name the files)", tool, ErrOverBudget, err)
			}
			for _, m := range found {
				if err := g.checkPlant(tool, realPath(m)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// changesFolder reports whether a simple command (as written, view; unwrapped, v; its
// wrappers, by) works in another folder than the shell's: cd, pushd, popd, git -C (or
// --git-dir, --work-tree), env -C or sudo -D (or --chdir).
func changesFolder(view, v, by []string) bool {
	switch v[0] {
	case "cd", "pushd", "popd":
		return true
	}
	for _, w := range view {
		switch {
		case v[0] == "git" && (w == "-C" || strings.HasPrefix(w, "--git-dir") || strings.HasPrefix(w, "--work-tree")),
			hasAny(by, "env", "sudo", "doas") && (w == "-C" || w == "-D" || strings.HasPrefix(w, "--chdir")):
			return true
		}
	}
	return false
}

// writeCandidates are the paths an argument of a writer may name: the word, an option's value
// (--target-directory=DIR, -tDIR), dd's of=FILE.
func writeCandidates(w string) []string {
	out := []string{w}
	if _, v, ok := strings.Cut(w, "="); ok {
		out = append(out, v)
	}
	if len(w) > 2 && w[0] == '-' && w[1] != '-' {
		out = append(out, w[2:])
	}
	var paths []string
	for _, c := range out {
		if c != "" && c != "-" {
			paths = append(paths, c)
		}
	}
	return paths
}

// shellWrites returns what a simple command (unwrapped) writes, as the guard sees it: the words
// that may name files it creates or changes, whether the program is a writer, and why it is
// refused outright ("" if it is not): it makes a git repository or changes git's configuration,
// or writes files named by an archive or a patch.
func shellWrites(v []string) (targets []string, writer bool, why string) {
	prog, args := v[0], v[1:]
	switch {
	case prog == "tar" && tarExtracts(args):
		return nil, true, "tar extracts files named by the archive, which the guard cannot see"
	case prog == "unzip" && !hasAny(args, "-l", "-v", "-t", "-Z", "-p", "-c", "-z"),
		prog == "cpio", prog == "patch":
		return nil, true, prog + " writes files named by its input, which the guard cannot see"
	case shellWriters[prog]:
		return args, true, ""
	case prog == "sed" && sedInPlace(args):
		return args, true, ""
	case prog == "git" && len(args) > 0:
		sub, rest := args[0], args[1:]
		switch {
		case sub == "init", sub == "clone",
			sub == "worktree" && hasAny(rest, "add", "move", "repair"),
			sub == "submodule" && len(rest) > 0 && !hasAny(rest[:1], "status", "summary"):
			return nil, true, "git " + sub + " makes a git repository, whose config and hooks run programs"
		case sub == "config" && !gitConfigReads(rest):
			return nil, true, "git config changes a repository's configuration, which names programs git runs"
		case sub == "apply" && (hasAny(rest, "--apply") || !hasAny(rest, "--check", "--stat", "--numstat", "--summary")),
			sub == "am":
			return nil, true, "git " + sub + " writes files named by a patch, which the guard cannot see"
		case sub == "mv":
			return rest, true, ""
		}
	}
	return outputTargets(prog, args), false, ""
}

// shortOutput are programs whose -o (or -O) names the file they write; elsewhere it is often a
// flag (grep -o, ls -o).
var shortOutput = map[string]bool{"sort": true, "go": true, "gcc": true, "cc": true, "clang": true, "git": true}

// outputTargets are the files a command's output options name: --output FILE, --output=FILE,
// --output-file=FILE and their abbreviations, and for shortOutput programs -o FILE, -O FILE.
func outputTargets(prog string, args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		short := (name == "-o" || name == "-O") && shortOutput[prog]
		if !short && !strings.HasPrefix(name, "--output") && !(len(name) >= 4 && strings.HasPrefix("--output", name)) {
			continue
		}
		if hasValue {
			out = append(out, value)
		} else if i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// tarExtracts reports whether tar's arguments ask it to extract: x in its first word (old style)
// or a cluster of short options, --extract or --get (or their abbreviations).
func tarExtracts(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a, "=")
			if len(name) >= 4 && (strings.HasPrefix("--extract", name) || strings.HasPrefix("--get", name)) {
				return true
			}
		case strings.HasPrefix(a, "-") || i == 0:
			if strings.ContainsRune(a, 'x') {
				return true
			}
		}
	}
	return false
}

// sedInPlace reports whether sed's arguments ask it to change the files it reads: -i (alone, with
// a suffix or in a cluster) or --in-place (or an abbreviation).
func sedInPlace(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a, "=")
			if len(name) >= 3 && strings.HasPrefix("--in-place", name) {
				return true
			}
		case strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'i'):
			return true
		}
	}
	return false
}

// gitConfigReadOptions are the options of git config that only read.
var gitConfigReadOptions = []string{
	"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list",
	"--show-origin", "--show-scope", "--name-only", "-z", "--null", "--type", "--bool", "--int", "--bool-or-int",
	"--path", "--expiry-date", "--default", "--global", "--system", "--local", "--worktree", "--file", "-f",
	"--blob", "--includes", "--no-includes", "--all", "--regexp", "--value", "--fixed-value", "--url",
}

// gitConfigReads reports whether git config's arguments only read: no option outside
// gitConfigReadOptions, and a reading mode (--get..., --list, get, list) or a name alone
// (git config user.name).
func gitConfigReads(args []string) bool {
	mode := false
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if !contains(gitConfigReadOptions, name) {
			return false
		}
		mode = mode || strings.HasPrefix(name, "--get") || name == "-l" || name == "--list"
	}
	switch {
	case mode:
		return true
	case len(words) > 0 && (words[0] == "get" || words[0] == "list"):
		return true
	}
	return len(words) == 1 && words[0] != "edit"
}

// hasAny reports whether args hold one of the words.
func hasAny(args []string, words ...string) bool {
	for _, w := range words {
		if contains(args, w) {
			return true
		}
	}
	return false
}
