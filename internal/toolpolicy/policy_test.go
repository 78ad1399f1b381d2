package toolpolicy

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustResolve(t *testing.T, p Policy, channel, session string) Effective {
	t.Helper()
	e, err := p.Resolve(channel, session)
	if err != nil {
		t.Fatalf("Resolve(%q, %q): %v", channel, session, err)
	}
	return e
}

func TestDefaultsPerChannel(t *testing.T) {
	cli := mustResolve(t, Policy{}, "cli", "")
	if !cli.AllowAll || len(cli.Allowed) != 0 || len(cli.Denied) != 0 {
		t.Errorf("cli default = %+v, want allow all and no lists", cli)
	}
	if cli.Source[AllTools] != "default:cli" {
		t.Errorf("cli Source[*] = %q", cli.Source[AllTools])
	}

	tg := mustResolve(t, Policy{}, "telegram", "")
	if tg.AllowAll {
		t.Error("telegram default allows everything")
	}
	for _, want := range []string{"Read", "Grep", "Glob", "Bash(ls:*)", "Bash(cat:*)", "Bash(git status:*)",
		"Bash(git log:*)", "Bash(git diff:*)", "Bash(grep:*)", "Bash(rg:*)", "Bash(head:*)", "Bash(tail:*)", "Bash(wc:*)"} {
		if !slices.Contains(tg.Allowed, want) {
			t.Errorf("telegram default does not allow %s", want)
		}
	}
	wantDenied := []string{"Bash(git push:*)", "Edit", "MultiEdit", "NotebookEdit", "Write"}
	if !reflect.DeepEqual(tg.Denied, wantDenied) {
		t.Errorf("telegram denied = %v, want %v", tg.Denied, wantDenied)
	}
	if tg.Source["Write"] != "default:telegram" {
		t.Errorf("telegram Source[Write] = %q", tg.Source["Write"])
	}

	web := mustResolve(t, Policy{}, "web", "")
	for _, want := range []string{"Read", "Write", "Edit", "Bash(ls:*)", "Bash(git add:*)"} {
		if !slices.Contains(web.Allowed, want) {
			t.Errorf("web default does not allow %s", want)
		}
	}
	wantDenied = []string{"Bash(curl:*)", "Bash(git push:*)", "Bash(rm:*)", "Bash(wget:*)"}
	if !reflect.DeepEqual(web.Denied, wantDenied) {
		t.Errorf("web denied = %v, want %v", web.Denied, wantDenied)
	}
}

func TestPrecedence(t *testing.T) {
	p := Policy{
		Global:   Rule{Allow: []string{"Write", "WebFetch"}, Deny: []string{"Task"}},
		Channels: map[string]Rule{"telegram": {Deny: []string{"Write"}, Allow: []string{"Task"}}},
		Sessions: map[string]Rule{"s1": {Allow: []string{"Write"}, Deny: []string{"WebFetch"}}},
	}
	tests := []struct {
		channel, session, tool string
		allowed                bool
		scope                  string
	}{
		// Global beats the default: telegram's default denies Write, global allows it.
		{"web", "", "Write", true, "global"},
		{"cli", "", "Task", false, "global"},
		// Channel beats global.
		{"telegram", "", "Write", false, "channel:telegram"},
		{"telegram", "", "Task", true, "channel:telegram"},
		{"telegram", "", "WebFetch", true, "global"},
		// Session beats channel.
		{"telegram", "s1", "Write", true, "session:s1"},
		{"telegram", "s1", "WebFetch", false, "session:s1"},
		// Another session is not affected.
		{"telegram", "s2", "Write", false, "channel:telegram"},
		// Default where nobody else speaks.
		{"telegram", "s1", "Edit", false, "default:telegram"},
	}
	for _, tc := range tests {
		e := mustResolve(t, p, tc.channel, tc.session)
		if got := slices.Contains(e.Allowed, tc.tool); got != tc.allowed {
			t.Errorf("%s/%s %s allowed = %v, want %v (allowed %v, denied %v)",
				tc.channel, tc.session, tc.tool, got, tc.allowed, e.Allowed, e.Denied)
		}
		if got := slices.Contains(e.Denied, tc.tool); got == tc.allowed {
			t.Errorf("%s/%s %s denied = %v, want %v", tc.channel, tc.session, tc.tool, got, !tc.allowed)
		}
		if e.Source[tc.tool] != tc.scope {
			t.Errorf("%s/%s Source[%s] = %q, want %q", tc.channel, tc.session, tc.tool, e.Source[tc.tool], tc.scope)
		}
		err := e.Check(tc.tool)
		if tc.allowed && err != nil {
			t.Errorf("%s/%s Check(%s) = %v, want nil", tc.channel, tc.session, tc.tool, err)
		}
		var de *DeniedError
		if !tc.allowed && (!errors.As(err, &de) || de.Scope != tc.scope) {
			t.Errorf("%s/%s Check(%s) = %v, want DeniedError from %s", tc.channel, tc.session, tc.tool, err, tc.scope)
		}
	}
}

func TestDenyBeatsAllowInOneScope(t *testing.T) {
	p := Policy{
		Global:   Rule{Allow: []string{"WebFetch"}, Deny: []string{"WebFetch"}},
		Sessions: map[string]Rule{"s": {Allow: []string{"Write", "Bash(git push:*)"}, Deny: []string{"Write", "Bash(git push:*)"}}},
	}
	e := mustResolve(t, p, "web", "s")
	for _, tool := range []string{"WebFetch", "Write", "Bash(git push:*)"} {
		if slices.Contains(e.Allowed, tool) || !slices.Contains(e.Denied, tool) {
			t.Errorf("%s: allowed %v, denied %v; want denied", tool, e.Allowed, e.Denied)
		}
	}
	if err := e.Check("Write"); err == nil {
		t.Error("Check(Write) = nil, want denied")
	}
}

func TestAllToolsRule(t *testing.T) {
	p := Policy{Sessions: map[string]Rule{
		"locked": {Deny: []string{"*"}, Allow: []string{"Read"}},
		"open":   {Allow: []string{"*"}},
	}}
	locked := mustResolve(t, p, "cli", "locked")
	if locked.AllowAll {
		t.Fatal("deny * did not turn AllowAll off")
	}
	if err := locked.Check("Read"); err != nil {
		t.Errorf("Check(Read) = %v", err)
	}
	var de *DeniedError
	if err := locked.Check("Write"); !errors.As(err, &de) || de.Scope != "session:locked" || de.Rule != "" {
		t.Errorf("Check(Write) = %#v, want not allowed by session:locked", err)
	}
	if got := locked.Flags("claude"); !reflect.DeepEqual(got, []string{"--allowedTools", "Read"}) {
		t.Errorf("flags = %q", got)
	}

	open := mustResolve(t, p, "telegram", "open")
	if !open.AllowAll {
		t.Fatal("allow * in a session did not allow everything")
	}
	if err := open.Check("WebFetch"); err != nil {
		t.Errorf("Check(WebFetch) = %v", err)
	}
	if err := open.Check("Write"); err == nil {
		t.Error("Write is still denied by the telegram default, want an error")
	}
}

func TestResolveErrors(t *testing.T) {
	_, err := Policy{}.Resolve("slack", "")
	if err == nil || !strings.Contains(err.Error(), `"slack"`) {
		t.Errorf("unknown channel: err = %v, want it named", err)
	}
	if _, err := (Policy{}).Resolve("", ""); err == nil {
		t.Error("empty channel: no error")
	}
	if _, err := (Policy{}).Resolve(" Telegram ", ""); err != nil {
		t.Errorf("channel names are case-insensitive: %v", err)
	}
	for _, bad := range []string{"", "Bash(ls", "Bash()", "Read,Write", "(x)", "Bad Name", "Read\x00"} {
		p := Policy{Sessions: map[string]Rule{"s": {Deny: []string{bad}}}}
		_, err := p.Resolve("cli", "s")
		if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), "session:s deny") {
			t.Errorf("rule %q: err = %v, want ErrInvalidRule naming the scope", bad, err)
		}
	}
	// A bad rule in a scope that does not apply does not stop Resolve, but Validate sees it.
	p := Policy{
		Channels: map[string]Rule{"web": {Allow: []string{"Bash("}}, "slack": {}},
		Sessions: map[string]Rule{"": {}},
	}
	if _, err := p.Resolve("cli", ""); err != nil {
		t.Errorf("Resolve(cli) = %v", err)
	}
	err = p.Validate()
	for _, want := range []string{`"slack"`, "channel:web allow", "empty session id"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
	if err := (Policy{Global: Rule{Allow: []string{"Read", "Bash(git log:*)", "*"}}}).Validate(); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
}

func TestCanonicalRules(t *testing.T) {
	// Spellings of one rule decide the same tool, so precedence works across them.
	p := Policy{Sessions: map[string]Rule{"s": {Allow: []string{" bash( git   push * ) ", "write"}}}}
	e := mustResolve(t, p, "telegram", "s")
	for _, tool := range []string{"Bash(git push:*)", "Write"} {
		if !slices.Contains(e.Allowed, tool) || slices.Contains(e.Denied, tool) {
			t.Errorf("%s: allowed %v denied %v", tool, e.Allowed, e.Denied)
		}
	}
	if err := e.Check("Bash(git push origin main)"); err != nil {
		t.Errorf("session allowed git push: %v", err)
	}
}

func TestFlagsClaude(t *testing.T) {
	tg := mustResolve(t, Policy{}, "telegram", "")
	got := tg.Flags("claude")
	want := []string{
		"--allowedTools", "Bash(cat:*),Bash(git diff:*),Bash(git log:*),Bash(git show:*),Bash(git status:*)," +
			"Bash(grep:*),Bash(head:*),Bash(ls:*),Bash(pwd),Bash(rg:*),Bash(tail:*),Bash(wc:*),Glob,Grep,Read",
		"--disallowedTools", "Bash(git push:*),Edit,MultiEdit,NotebookEdit,Write",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("telegram claude flags\n got %q\nwant %q", got, want)
	}
	if got := mustResolve(t, Policy{}, "cli", "").Flags("claude"); len(got) != 0 {
		t.Errorf("cli flags = %q, want none", got)
	}
	cli := mustResolve(t, Policy{Global: Rule{Deny: []string{"Bash(git push:*)", "WebFetch"}}}, "cli", "")
	if got, want := cli.Flags("claude"), []string{"--disallowedTools", "Bash(git push:*),WebFetch"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cli with denies = %q, want %q", got, want)
	}
	if got := cli.Flags("my-custom-cli"); !reflect.DeepEqual(got, cli.Flags("claude")) {
		t.Errorf("unknown kind = %q, want the claude form", got)
	}
	if _, err := cli.FlagsFor("my-custom-cli"); err == nil || !strings.Contains(err.Error(), "my-custom-cli") {
		t.Errorf("FlagsFor(unknown) = %v", err)
	}
}

func TestFlagsOtherCLIs(t *testing.T) {
	tg := mustResolve(t, Policy{}, "telegram", "")
	web := mustResolve(t, Policy{}, "web", "")
	cli := mustResolve(t, Policy{Global: Rule{Deny: []string{"Bash(git push:*)"}}}, "cli", "")
	mcp := Effective{Channel: "web", Allowed: []string{"mcp__github__create_issue", "mcp__jira", "Task"}}

	tests := []struct {
		name string
		e    Effective
		kind string
		want []string
	}{
		{"copilot telegram", tg, "copilot", []string{
			"--allow-tool", "read,shell(cat:*),shell(git diff:*),shell(git log:*),shell(git show:*),shell(git status:*)," +
				"shell(grep:*),shell(head:*),shell(ls:*),shell(pwd),shell(rg:*),shell(tail:*),shell(wc:*)",
			"--deny-tool", "shell(git push:*),write",
		}},
		{"copilot cli", cli, "copilot", []string{"--allow-all-tools", "--deny-tool", "shell(git push:*)"}},
		{"copilot mcp", mcp, "Copilot", []string{"--allow-tool", "github(create_issue),jira"}},
		{"codex telegram", tg, "codex", []string{"--sandbox", "read-only"}},
		{"codex web", web, "codex", []string{"--sandbox", "workspace-write"}},
		{"codex cli", cli, "codex", []string{"--sandbox", "workspace-write"}},
		{"kimi telegram", tg, "kimi", nil},
		{"kimi cli", mustResolve(t, Policy{}, "cli", ""), "kimi", nil},
	}
	for _, tc := range tests {
		if got := tc.e.Flags(tc.kind); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}

	if _, err := tg.FlagsFor("kimi"); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("FlagsFor(kimi) on telegram = %v, want ErrUnenforceable", err)
	}
	if f, err := mustResolve(t, Policy{}, "cli", "").FlagsFor("kimi"); err != nil || f != nil {
		t.Errorf("FlagsFor(kimi) on cli = %q, %v", f, err)
	}
}

func TestCheck(t *testing.T) {
	tg := mustResolve(t, Policy{}, "telegram", "")
	web := mustResolve(t, Policy{}, "web", "")
	cli := mustResolve(t, Policy{}, "cli", "")
	mcp := Effective{Channel: "web", Allowed: []string{"mcp__github", "Read(./docs/**)", "WebFetch(domain:example.com)"},
		Denied: []string{"mcp__github__delete_repo"}}

	const (
		ok         = ""
		notAllowed = "-"
	)
	tests := []struct {
		e    Effective
		tool string
		rule string // ok, notAllowed, or the deny rule expected
	}{
		{tg, "Read", ok},
		{tg, "Read(./main.go)", ok},
		{tg, "Grep", ok},
		{tg, "Write", "Write"},
		{tg, "Edit(./a.go)", "Edit"},
		{tg, "WebFetch", notAllowed},
		{tg, "Bash", notAllowed},
		{tg, "Bash(git status)", ok},
		{tg, "Bash(git status --short)", ok},
		{tg, "Bash(git  log   -p)", ok},
		{tg, "Bash(ls)", ok},
		{tg, "Bash(pwd)", ok},
		{tg, "Bash(pwd -P)", notAllowed},
		{tg, "Bash(lsof)", notAllowed},
		{tg, "Bash(git statusx)", notAllowed},
		{tg, "Bash(cat a.go | wc -l)", ok},
		{tg, "Bash(grep -rn 'a|b' . 2>/dev/null)", ok},
		{tg, "Bash(rg foo 2>&1 | head)", ok},
		{tg, `Bash(grep "x;y" file)`, ok},
		{tg, "Bash(ls && rm -rf /)", notAllowed},
		{tg, "Bash(cat a > b)", notAllowed},
		{tg, "Bash(cat a >> /dev/null)", ok},
		{tg, "Bash(cat $(which ls))", notAllowed},
		{tg, "Bash(ls `pwd`)", notAllowed},
		{tg, "Bash((ls))", notAllowed},
		{tg, "Bash(rg --pre sh pattern)", notAllowed},
		{tg, "Bash(rg --pre=./x pattern)", notAllowed},
		{tg, "Bash(git diff --output=/tmp/x)", notAllowed},
		{tg, "Bash(/bin/ls)", notAllowed},
		{tg, "Bash(FOO=1 ls)", notAllowed},
		{tg, "Bash(git push origin main)", "Bash(git push:*)"},
		{tg, "Bash(git push)", "Bash(git push:*)"},
		{tg, "Bash(ls; git push)", "Bash(git push:*)"},
		{tg, "Bash(ls\ngit push)", "Bash(git push:*)"},
		{tg, "Bash(echo $(git push))", "Bash(git push:*)"},
		{tg, "Bash(sudo -u root git push)", "Bash(git push:*)"},
		{tg, "Bash(GIT_TRACE=1 git push)", "Bash(git push:*)"},
		{tg, "Bash(git -C /repo push)", "Bash(git push:*)"},
		{tg, "Bash(/usr/bin/git push)", "Bash(git push:*)"},
		{tg, "Bash(sh -c 'git push --force')", "Bash(git push:*)"},
		{tg, "Bash(bash -ec \"git push\")", "Bash(git push:*)"},
		{tg, "Bash(eval git push)", "Bash(git push:*)"},
		{tg, "Bash(xargs -n1 git push < remotes)", "Bash(git push:*)"},
		{tg, "Bash(timeout 10 git push)", "Bash(git push:*)"},
		{tg, "Bash(git pushx)", notAllowed},
		{tg, `Bash(grep "git push" notes.txt)`, ok},
		{web, "Write(./a.go)", ok},
		{web, "Bash(git add -A)", ok},
		{web, "Bash(mkdir -p out)", ok},
		{web, "Bash(rm -rf build)", "Bash(rm:*)"},
		{web, "Bash(curl https://example.com)", "Bash(curl:*)"},
		{web, "Bash(make)", notAllowed},
		{web, "MultiEdit", notAllowed},
		{cli, "Bash(git push origin main)", ok},
		{cli, "Bash(cat $(ls) > out)", ok},
		{cli, "Write", ok},
		{cli, "mcp__anything__x", ok},
		{mcp, "mcp__github__create_issue", ok},
		{mcp, "mcp__github__delete_repo", "mcp__github__delete_repo"},
		{mcp, "mcp__gitlab__x", notAllowed},
		{mcp, "Read(./docs/a/b.md)", ok},
		{mcp, "Read(./src/a.go)", notAllowed},
		{mcp, "Read", notAllowed},
		{mcp, "WebFetch(domain:example.com)", ok},
		{mcp, "read(./docs/x)", ok},
	}
	for _, tc := range tests {
		err := tc.e.Check(tc.tool)
		switch tc.rule {
		case ok:
			if err != nil {
				t.Errorf("%s: Check(%q) = %v, want nil", tc.e.Channel, tc.tool, err)
			}
		default:
			var de *DeniedError
			if !errors.As(err, &de) {
				t.Errorf("%s: Check(%q) = %v, want *DeniedError", tc.e.Channel, tc.tool, err)
				continue
			}
			wantRule := tc.rule
			if wantRule == notAllowed {
				wantRule = ""
			}
			if de.Rule != wantRule || de.Tool != tc.tool {
				t.Errorf("%s: Check(%q) = %+v, want rule %q", tc.e.Channel, tc.tool, de, wantRule)
			}
			if !strings.Contains(de.Error(), strconv.Quote(tc.tool)) || !strings.Contains(de.Error(), de.Scope) {
				t.Errorf("%s: %q does not name the tool and the scope", tc.e.Channel, de.Error())
			}
		}
	}
}

// Issue 33: what the parser cannot prove, no command rule covers; with deny rules for commands,
// the deny rules fail closed (even when everything else is allowed).
func TestCheckUnproven(t *testing.T) {
	tg := mustResolve(t, Policy{}, "telegram", "")
	cli := mustResolve(t, Policy{}, "cli", "")
	cliDeny := mustResolve(t, Policy{Sessions: map[string]Rule{"s": {Deny: []string{"Bash(git push:*)"}}}}, "cli", "s")
	bare := mustResolve(t, Policy{Sessions: map[string]Rule{"s": {Allow: []string{"Bash"}}}}, "web", "s")
	tests := []struct {
		e         Effective
		tool      string
		allowed   bool
		denyRules bool
		unchecked string
	}{
		{tg, "Bash(cat $'x')", false, false, "$'x'"},
		{tg, "Bash(cat {a,b})", false, false, "{a,b}"},
		{tg, "Bash(ls 2>&1#; id)", false, false, "a redirection into 1#"},
		{tg, "Bash(ls\r# ; id)", false, false, "control character"},
		{tg, "Bash(if true; then ls; fi)", false, false, "compound command"},
		{cli, "Bash(echo $(id) $'x' {a,b})", true, false, ""},
		{cli, "Bash(ls\r)", true, false, ""}, // the guard refuses it
		{cliDeny, "Bash(ls -la && cat README.md | wc -l)", true, false, ""},
		{cliDeny, "Bash(cat \"$HOME/x\" > out)", true, false, ""},
		{cliDeny, "Bash(g=git; $g push)", false, true, "$g"},
		{cliDeny, "Bash(git {push,})", false, true, "{push,}"},
		{cliDeny, "Bash(ls $(pwd))", false, true, "$(pwd)"},
		{cliDeny, "Bash(ls\r; git push)", false, true, "control character"},
		{cliDeny, "Bash(echo 'open)", false, true, "does not parse"},
		{cliDeny, "Bash(sh -c 'eval $x')", false, true, "$x"},
		{cliDeny, "Bash(x='a[$(git push)]'; (( x )))", false, true, "((x))"},
		{cliDeny, "Bash([[ -f x ]] && ls)", false, true, "[[ -f x ]]"},
		{bare, "Bash(echo $X)", false, true, "$X"},
		{bare, "Bash(echo \"$HOME\" && ls)", true, false, ""},
	}
	for _, tc := range tests {
		tool := strings.ReplaceAll(tc.tool, `\r`, "\r")
		err := tc.e.Check(tool)
		if tc.allowed {
			if err != nil {
				t.Errorf("%s: Check(%q) = %v, want nil", tc.e.Channel, tool, err)
			}
			continue
		}
		var de *DeniedError
		if !errors.As(err, &de) || de.Rule != "" || de.DenyRules != tc.denyRules || !strings.Contains(de.Unchecked, tc.unchecked) {
			t.Errorf("%s: Check(%q) = %#v, want DenyRules=%v Unchecked ~ %q", tc.e.Channel, tool, err, tc.denyRules, tc.unchecked)
			continue
		}
		if want := "cannot be checked against those deny rules"; tc.denyRules && !strings.Contains(de.Error(), want) {
			t.Errorf("%q does not say %q", de.Error(), want)
		}
		if want := tc.e.Source["Bash(git push:*)"]; tc.denyRules && de.Scope != want {
			t.Errorf("%s: scope %q, want the deny rule's, %q", tool, de.Scope, want)
		}
	}
}

func TestCheckErrors(t *testing.T) {
	e := mustResolve(t, Policy{}, "telegram", "")
	for _, bad := range []string{"", "  ", "Bash(", "Bash()", "(ls)", "Bad Name"} {
		if err := e.Check(bad); !errors.Is(err, ErrInvalidTool) {
			t.Errorf("Check(%q) = %v, want ErrInvalidTool", bad, err)
		}
	}
	err := e.Check("Write")
	if got, want := err.Error(), `toolpolicy: tool "Write" denied by the default:telegram policy (rule "Write")`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err = e.Check("WebFetch")
	if !strings.Contains(err.Error(), `"WebFetch" not allowed by the default:telegram policy`) {
		t.Errorf("Error() = %q", err)
	}
	broken := Effective{Denied: []string{"Bash("}}
	if err := broken.Check("Read"); err == nil || errors.As(err, new(*DeniedError)) {
		t.Errorf("malformed effective policy: %v", err)
	}
}

func TestNonIdempotent(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		channel string
		want    []string
	}{
		{"cli default", Policy{}, "cli", []string{"Bash(docker push:*)", "Bash(git push:*)", "Bash(npm publish:*)"}},
		{"telegram default", Policy{}, "telegram", nil},
		{"web default", Policy{}, "web", nil},
		{"cli without push", Policy{Global: Rule{Deny: []string{"Bash(git push:*)"}}}, "cli",
			[]string{"Bash(docker push:*)", "Bash(npm publish:*)"}},
		{"telegram session push", Policy{Sessions: map[string]Rule{"s": {Allow: []string{"Bash(git push:*)"}}}}, "telegram",
			[]string{"Bash(git push:*)"}},
		{"explicit publish", Policy{Channels: map[string]Rule{"web": {Allow: []string{"Bash(npm publish --tag next)"}}}}, "web",
			[]string{"Bash(npm publish --tag next)"}},
		{"broad git still denied push", Policy{Channels: map[string]Rule{"web": {Allow: []string{"Bash(git:*)"}}}}, "web", nil},
		{"broad git", Policy{Channels: map[string]Rule{"telegram": {Allow: []string{"Bash(git:*)"}, Deny: []string{"Write"}}},
			Sessions: map[string]Rule{"s": {Allow: []string{"Bash(git push:*)"}}}}, "telegram", []string{"Bash(git push:*)"}},
		{"bare bash", Policy{Sessions: map[string]Rule{"s": {Allow: []string{"Bash"}}}}, "web",
			[]string{"Bash(docker push:*)", "Bash(npm publish:*)"}},
	}
	for _, tc := range tests {
		e := mustResolve(t, tc.p, tc.channel, "s")
		if got := NonIdempotent(e); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: NonIdempotent = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEffectiveIsPlainData(t *testing.T) {
	// Resolve must not share slices with the policy or the defaults.
	p := Policy{Global: Rule{Allow: []string{"Read"}}}
	e := mustResolve(t, p, "telegram", "")
	e.Allowed[0] = "changed"
	again := mustResolve(t, p, "telegram", "")
	if slices.Contains(again.Allowed, "changed") || p.Global.Allow[0] != "Read" {
		t.Error("Resolve results share memory")
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"Read", "Bash(ls; git push)", "Bash(echo $(a `b` \"$(c)\"))", "Bash(a >& 2>", "Bash(x <<EOF)",
		"Bash('unterminated)", "Bash(\"a\\)", "Bash(sudo -u)", "Bash(timeout)", "Bash(sh -c)", "mcp__x__y", "Bash(git -C)"} {
		f.Add(s)
	}
	policies := []Effective{
		mustResolveF(f, "telegram"), mustResolveF(f, "web"), mustResolveF(f, "cli"),
	}
	f.Fuzz(func(t *testing.T, tool string) {
		for _, e := range policies {
			_ = e.Check(tool)
		}
		_, _ = Policy{Global: Rule{Allow: []string{tool}}}.Resolve("cli", "")
	})
}

func mustResolveF(f *testing.F, channel string) Effective {
	e, err := Policy{}.Resolve(channel, "")
	if err != nil {
		f.Fatal(err)
	}
	return e
}
