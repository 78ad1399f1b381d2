package hooktemporal

// What the approval's card shows of a permission request (issue 61): every field of the tool
// call, and exactly what "Allow for this session" gives. Claude Code's suggestions of lasting
// rules are given only as far as the request goes: its own command again, or the folder of the
// file it names; a wildcard, a whole tool, a folder like / or the home, a mode change are listed
// on the card as offered and not given.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/intentq/intentq/workflows"
)

// Bounds of what the hook carries to the card: a value longer than maxFieldCarry characters
// keeps its head and tail (the card says how much is left out); past maxFields fields the
// card takes no answer.
const (
	maxFieldCarry = 4096
	maxFields     = 50
	// maxCarried bounds the action (for the push) and the agent's description.
	maxCarried = 4096
)

// mainFields name the field a tool call is about, in the order they are looked for.
var mainFields = []string{"command", "cmd", "file_path", "notebook_path", "path", "url", "pattern"}

// fieldsOf is every field of a tool's input, the main one first and the others by name, with
// the agent's description apart (said); more counts the fields past maxFields.
func fieldsOf(input json.RawMessage) (fields []workflows.ApprovalField, said string, more int) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(input, &raw) != nil {
		return []workflows.ApprovalField{carried("input", strings.TrimSpace(string(input)))}, "", 0
	}
	if d, ok := raw["description"]; ok && json.Unmarshal(d, &said) == nil {
		delete(raw, "description")
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(mainFields, a), slices.Index(mainFields, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	for i, name := range names {
		if i == maxFields {
			return fields, said, len(names) - maxFields
		}
		fields = append(fields, carried(name, fieldValue(raw[name])))
	}
	return fields, said, 0
}

// fieldValue is a string field as it is, any other as indented JSON.
func fieldValue(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, v, "", "  ") != nil {
		return string(v)
	}
	return b.String()
}

// carried is a field as the hook carries it: whole, or its head and tail when too long.
func carried(name, value string) workflows.ApprovalField {
	n := utf8.RuneCountInString(value)
	if n <= maxFieldCarry {
		return workflows.ApprovalField{Name: name, Value: value}
	}
	runes := []rune(value)
	half := maxFieldCarry / 2
	return workflows.ApprovalField{Name: name, Value: string(runes[:half]) + string(runes[n-half:]), At: half, LeftOut: n - maxFieldCarry}
}

// shellTools are the tools whose rules name a command.
var shellTools = []string{"Bash", "PowerShell"}

// sessionGrants sorts Claude Code's suggestions of lasting rules into the rules "Allow for this
// session" hands it (scoped to the session, none wider than the request), the lines that say
// what they give (grants), and the lines that say what was offered and is not given, and why
// (withheld). A wildcard rule for the request's own command is narrowed to that command.
func sessionGrants(tool string, input json.RawMessage, cwd, home string, suggestions []map[string]any) (rules []map[string]any, grants, withheld []string) {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	command, _ := fields["command"].(string)
	target := ""
	for _, key := range []string{"file_path", "notebook_path", "path"} {
		if p, ok := fields[key].(string); ok && p != "" {
			target = p
			break
		}
	}
	if target != "" && !filepath.IsAbs(target) && filepath.IsAbs(cwd) {
		target = filepath.Join(cwd, target)
	}
	gaveCommand := false
	for _, sug := range suggestions {
		kind, _ := sug["type"].(string)
		switch kind {
		case "addRules":
			if b, _ := sug["behavior"].(string); b != "allow" {
				withheld = append(withheld, fmt.Sprintf("a %s rule: not a permission to give", b))
				continue
			}
			list, _ := sug["rules"].([]any)
			var kept []any
			for _, r := range list {
				rule, _ := r.(map[string]any)
				name, _ := rule["toolName"].(string)
				content, hasContent := rule["ruleContent"].(string)
				text := name
				if hasContent {
					text += "(" + content + ")"
				}
				switch {
				case name != tool:
					withheld = append(withheld, text+": another tool than this request's")
				case !slices.Contains(shellTools, tool) || command == "":
					withheld = append(withheld, text+": every call of "+tool+" it matches, wider than this request")
				case strings.Contains(command, "*"):
					withheld = append(withheld, text+": this command holds a *, which a rule reads as a wildcard")
				default:
					if !hasContent || content != command {
						withheld = append(withheld, text+": wider than this command; only the command itself is given")
					}
					if !gaveCommand {
						kept = append(kept, map[string]any{"toolName": tool, "ruleContent": command})
						grants = append(grants, tool+"("+command+")")
						gaveCommand = true
					}
				}
			}
			if len(kept) > 0 {
				rules = append(rules, scoped(sug, "rules", kept))
			}
		case "addDirectories":
			list, _ := sug["directories"].([]any)
			var kept []any
			for _, d := range list {
				dir, _ := d.(string)
				if why := widerFolder(dir, target, home); why != "" {
					withheld = append(withheld, "the folder "+dir+": "+why)
					continue
				}
				if line := "folder " + filepath.Clean(dir); !slices.Contains(grants, line) {
					kept = append(kept, dir)
					grants = append(grants, line)
				}
			}
			if len(kept) > 0 {
				rules = append(rules, scoped(sug, "directories", kept))
			}
		case "setMode":
			mode, _ := sug["mode"].(string)
			withheld = append(withheld, "the mode "+mode+": a mode change is never given from the phone")
		default:
			withheld = append(withheld, kind+": not given from the phone")
		}
	}
	return rules, grants, withheld
}

// scoped is a suggestion with its list (key) replaced by what is given, for this session only.
func scoped(sug map[string]any, key string, kept []any) map[string]any {
	out := map[string]any{}
	for k, v := range sug {
		out[k] = v
	}
	out[key] = kept
	out["destination"] = "session"
	return out
}

// widerFolder says why dir is wider than a request for target ("" when it is not): it must be the
// folder target names or the one that holds it, an absolute path below the top level, and neither
// the home folder nor a folder above it.
func widerFolder(dir, target, home string) string {
	clean := filepath.Clean(dir)
	switch {
	case !filepath.IsAbs(dir):
		return "not an absolute path"
	case target == "":
		return "this request names no file or folder"
	case clean != filepath.Clean(target) && clean != filepath.Dir(filepath.Clean(target)):
		return "wider than " + target
	case home != "" && (clean == filepath.Clean(home) || strings.HasPrefix(filepath.Clean(home)+"/", clean+"/")):
		return "the home folder or above it"
	case strings.Count(clean, "/") < 2:
		return "a top-level folder"
	}
	return ""
}

// clip is s cut to at most n characters, marked when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
