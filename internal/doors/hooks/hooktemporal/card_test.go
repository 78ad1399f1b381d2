package hooktemporal

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/workflows"
)

// Issue 61: every field of a call reaches the card, the command first; the description apart; a
// value too long to carry keeps its head and tail and says how much is left out.
func TestFieldsOfKeepsEveryField(t *testing.T) {
	long := "echo " + strings.Repeat("x", 10000) + " | sh"
	input, _ := json.Marshal(map[string]any{"command": long, "description": "Look\u202e", "run_in_background": true,
		"dangerouslyDisableSandbox": true, "timeout": 600000, "env": map[string]any{"A": "b"}})
	fields, said, more := fieldsOf(input)
	if said != "Look\u202e" || more != 0 {
		t.Errorf("said %q, more %d", said, more)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if want := []string{"command", "dangerouslyDisableSandbox", "env", "run_in_background", "timeout"}; !reflect.DeepEqual(names, want) {
		t.Errorf("fields %v, want %v", names, want)
	}
	cmd := fields[0]
	if !strings.HasPrefix(cmd.Value, "echo xxx") || !strings.HasSuffix(cmd.Value, "xxx | sh") || cmd.At != maxFieldCarry/2 ||
		cmd.LeftOut != len(long)-maxFieldCarry {
		t.Errorf("the long command carried as %d chars, at %d, %d left out", len(cmd.Value), cmd.At, cmd.LeftOut)
	}
	if fields[1].Value != "true" || fields[2].Value != "{\n  \"A\": \"b\"\n}" || fields[4].Value != "600000" {
		t.Errorf("values: %+v", fields)
	}
	many := map[string]any{}
	for i := range maxFields + 7 {
		many[strings.Repeat("f", i+1)] = i
	}
	input, _ = json.Marshal(many)
	if fields, _, more := fieldsOf(input); len(fields) != maxFields || more != 7 {
		t.Errorf("%d fields carried, %d more", len(fields), more)
	}
}

// Issue 61: "Allow for this session" gives no more than the request: Claude Code's wildcard for
// the command is narrowed to the command itself, a folder is given only when it holds the file
// asked for and is neither /, the home nor above it; whole tools, mode changes and other tools'
// rules are listed as not given.
func TestSessionGrantsNoWiderThanTheRequest(t *testing.T) {
	suggest := func(s string) []map[string]any {
		var out []map[string]any
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name, tool, input, suggestions string
		rules                          []map[string]any
		grants, withheld               []string
	}{
		{name: "wildcard narrowed, / withheld", tool: "Bash", input: `{"command":"npm install"}`,
			suggestions: `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm:*"}],"behavior":"allow","destination":"localSettings"},{"type":"addDirectories","directories":["/"],"destination":"session"}]`,
			rules:       []map[string]any{{"type": "addRules", "behavior": "allow", "destination": "session", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "npm install"}}}},
			grants:      []string{"Bash(npm install)"},
			withheld:    []string{"Bash(npm:*): wider than this command; only the command itself is given", "the folder /: this request names no file or folder"}},
		{name: "the exact command", tool: "Bash", input: `{"command":"make"}`,
			suggestions: `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make"}],"behavior":"allow"},{"type":"setMode","mode":"acceptEdits"}]`,
			rules:       []map[string]any{{"type": "addRules", "behavior": "allow", "destination": "session", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "make"}}}},
			grants:      []string{"Bash(make)"},
			withheld:    []string{"the mode acceptEdits: a mode change is never given from the phone"}},
		{name: "a command with a star", tool: "Bash", input: `{"command":"rm *.o"}`,
			suggestions: `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm:*"},{"toolName":"Bash"}],"behavior":"allow"}]`,
			withheld:    []string{"Bash(rm:*): this command holds a *, which a rule reads as a wildcard", "Bash: this command holds a *, which a rule reads as a wildcard"}},
		{name: "a file's folder", tool: "Read", input: `{"file_path":"src/app/main.go"}`,
			suggestions: `[{"type":"addDirectories","directories":["/work/p/src/app","/work/p","/home/u","/home","/etc"]},{"type":"addRules","rules":[{"toolName":"Read"}],"behavior":"allow"}]`,
			rules:       []map[string]any{{"type": "addDirectories", "destination": "session", "directories": []any{"/work/p/src/app"}}},
			grants:      []string{"folder /work/p/src/app"},
			withheld: []string{"the folder /work/p: wider than /work/p/src/app/main.go", "the folder /home/u: wider than /work/p/src/app/main.go",
				"the folder /home: wider than /work/p/src/app/main.go", "the folder /etc: wider than /work/p/src/app/main.go",
				"Read: every call of Read it matches, wider than this request"}},
		{name: "the home's own file", tool: "Read", input: `{"file_path":"/home/u/.bashrc"}`,
			suggestions: `[{"type":"addDirectories","directories":["/home/u"]}]`,
			withheld:    []string{"the folder /home/u: the home folder or above it"}},
		{name: "an MCP tool, another tool", tool: "mcp__db__query", input: `{"sql":"drop table x"}`,
			suggestions: `[{"type":"addRules","rules":[{"toolName":"mcp__db__query"},{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow"}]`,
			withheld:    []string{"mcp__db__query: every call of mcp__db__query it matches, wider than this request", "Bash(ls): another tool than this request's"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rules, grants, withheld := sessionGrants(c.tool, json.RawMessage(c.input), "/work/p", "/home/u", suggest(c.suggestions))
			if !reflect.DeepEqual(rules, c.rules) && (len(rules) > 0 || len(c.rules) > 0) {
				t.Errorf("rules %v, want %v", rules, c.rules)
			}
			if !reflect.DeepEqual(grants, c.grants) {
				t.Errorf("grants %q, want %q", grants, c.grants)
			}
			if !reflect.DeepEqual(withheld, c.withheld) {
				t.Errorf("withheld %q, want %q", withheld, c.withheld)
			}
		})
	}
}

// Issue 61: the approval a request becomes: all fields for the card; Allow for this session
// offered only when something no wider than the request is left to give.
func TestApprovalInputOffersSessionOnlyWhenNarrow(t *testing.T) {
	s := ApprovalSettings{Session: "s", CLI: "claude", Chat: "1"}
	in := func(input, suggestions string) workflows.ApprovalInput {
		var req hooks.PermissionInput
		if err := json.Unmarshal([]byte(`{"tool_name":"Bash","tool_input":`+input+`,"permission_suggestions":`+suggestions+`}`), &req); err != nil {
			t.Fatal(err)
		}
		got, _, err := approvalInput(s, req, time.Now(), "/home/u")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	wide := in(`{"command":"ls *"}`, `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow"},{"type":"addDirectories","directories":["/"]}]`)
	if len(wide.Buttons) != 2 || wide.Buttons[1].Choice != workflows.ChoiceDeny || len(wide.Withheld) != 2 {
		t.Errorf("nothing narrow to give, yet: %+v", wide)
	}
	narrow := in(`{"command":"ls","dangerouslyDisableSandbox":true}`, `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow"}]`)
	if len(narrow.Buttons) != 3 || narrow.Buttons[1].Choice != workflows.ChoiceAllowSession || len(narrow.Fields) != 2 {
		t.Errorf("narrowed: %+v", narrow)
	}
}
