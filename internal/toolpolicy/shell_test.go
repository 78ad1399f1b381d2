package toolpolicy

import (
	"reflect"
	"slices"
	"testing"
)

func TestParseCommand(t *testing.T) {
	const u = unprovenMark
	tests := []struct {
		in       string
		segments [][]string
		opaque   bool
		unproven []string
	}{
		{"ls -la", [][]string{{"ls", "-la"}}, false, nil},
		{"  git   log  ", [][]string{{"git", "log"}}, false, nil},
		{"a; b && c || d | e & f |& g", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}}, false, nil},
		{"a\nb", [][]string{{"a"}, {"b"}}, false, nil},
		{"! a", [][]string{{"a"}}, false, nil},
		{`grep 'a;b' "c|d" e\ f`, [][]string{{"grep", "a;b", "c|d", "e f"}}, false, nil},
		{`echo "say \"hi\" \$x \n"`, [][]string{{"echo", `say "hi" $x \n`}}, false, nil},
		{"echo 'two\nlines'", [][]string{{"echo", "two\nlines"}}, false, nil},
		{"ls # rm -rf /\npwd", [][]string{{"ls"}, {"pwd"}}, false, nil},
		{"a#b", [][]string{{"a#b"}}, false, nil},
		{"cat x 2>/dev/null", [][]string{{"cat", "x"}}, false, nil},
		{"cat x 2>&1 >&2 3<&0 2>&-", [][]string{{"cat", "x"}}, false, nil},
		{"cat x &>/dev/null", [][]string{{"cat", "x"}}, false, nil},
		{"cat < in", [][]string{{"cat"}}, false, nil},
		{"cat x > out", [][]string{{"cat", "x"}}, true, nil},
		{"cat x >> out", [][]string{{"cat", "x"}}, true, nil},
		{"cat <<EOF\nx\nEOF", [][]string{{"cat"}}, true, nil},
		{"cat <<< x", [][]string{{"cat"}}, true, nil},
		{"FOO=1 ls", [][]string{{"FOO=1", "ls"}}, false, nil},
		{`echo $HOME ${PWD} "$HOME/x" ~/y`, [][]string{{"echo", homeRef, pwdRef, homeRef + "/x", "~/y"}}, false, nil},
		{"cat *.go x{1}..y {}", [][]string{{"cat", "*.go", "x{1}..y", "{}"}}, false, nil},
		{"a \\\nb", [][]string{{"a", "b"}}, false, nil},
		{"", nil, false, nil},
		{"echo ''", [][]string{{"echo", ""}}, false, nil},
		// Substitutions: the word is unproven, the commands inside are seen.
		{"echo $(git push)", [][]string{{"echo", u + "$(git push)"}, {"git", "push"}}, true, []string{"$(git push)"}},
		{"echo \"$(a $(b))\"", [][]string{{"echo", u + "$(a $(b))"}, {"a", u + "$(b)"}, {"b"}}, true, []string{`"$(a $(b))"`, "$(b)"}},
		{"echo `a`", [][]string{{"echo", u + "$(a)"}, {"a"}}, true, []string{"$(a)"}},
		{"diff <(a) >(b)", [][]string{{"diff", u + "<(a)", u + ">(b)"}, {"a"}, {"b"}}, true, []string{"<(a)", ">(b)"}},
		// Compound commands are opaque; the commands inside are seen.
		{"(cd x; ls)", [][]string{{"cd", "x"}, {"ls"}}, true, nil},
		{"if true; then ls; fi", [][]string{{"true"}, {"ls"}}, true, nil},
		{"f() { id; }; f", [][]string{{"id"}, {"f"}}, true, nil},
		{"[[ -f x ]] && ls", [][]string{{"ls"}}, true, []string{"[[ -f x ]]"}},
		// What bash computes is not proven.
		{"cat $'\\'' ; touch PWNED #'", [][]string{{"cat", u + `$'\''`}, {"touch", "PWNED"}}, true, []string{`$'\''`}},
		{`cat $"x"`, [][]string{{"cat", u + "x"}}, true, []string{`$"x"`}},
		{"cat {a,b}", [][]string{{"cat", u + "{a,b}"}}, true, []string{"{a,b}"}},
		{"cat {1..3}", [][]string{{"cat", u + "{1..3}"}}, true, []string{"{1..3}"}},
		{`cat {"a",b}`, [][]string{{"cat", u + "{a,b}"}}, true, []string{`{"a",b}`}},
		{"cat $1 $@ $$", [][]string{{"cat", u + "$1", u + "$@", u + "$$"}}, true, []string{"$1", "$@", "$$"}},
		{"cat ${HOME:0} ${PWD%/*/*}", [][]string{{"cat", u + "${HOME:0}", u + "${PWD%/*/*}"}}, true, []string{"${HOME:0}", "${PWD%/*/*}"}},
		{"cat ${#HOME} ${!HOME} ${HOME[0]} ${HOME/x/y} ${HOME:-x}", [][]string{{"cat", u + "${#HOME}", u + "${!HOME}", u + "${HOME[0]}", u + "${HOME/x/y}", u + "${HOME:-x}"}},
			true, []string{"${#HOME}", "${!HOME}", "${HOME[0]}", "${HOME/x/y}", "${HOME:-x}"}},
		{"cat $((1+1)) @(a|b) X=a:~/b", [][]string{{"cat", u + "$((1 + 1))", u + "@(a|b)", u + "X=a:~/b"}}, true, []string{"$((1 + 1))", "@(a|b)", "X=a:~/b"}},
		{"ls 2>&1#; id", [][]string{{"ls"}, {"id"}}, true, nil},
	}
	for _, tc := range tests {
		c := parseCommand(tc.in)
		if c.err != nil || !reflect.DeepEqual(c.segments, tc.segments) || c.opaque != tc.opaque || !reflect.DeepEqual(c.unproven, tc.unproven) {
			t.Errorf("parseCommand(%q) = %q opaque=%v unproven=%q err=%v,\n want %q opaque=%v unproven=%q",
				tc.in, c.segments, c.opaque, c.unproven, c.err, tc.segments, tc.opaque, tc.unproven)
		}
	}
	// Files redirections read and write.
	c := parseCommand("cat < in > out 2>> log >&file 2>/dev/null")
	if !reflect.DeepEqual(c.inputs, []string{"in"}) || !reflect.DeepEqual(c.outputs, []string{"out", "log", "file"}) {
		t.Errorf("inputs %q outputs %q", c.inputs, c.outputs)
	}
	// Other words: for lists, words inside parameter expansions.
	if c := parseCommand("for f in a ~/b; do :; done; echo ${x:-~/.ssh}"); !slices.Contains(c.words, "~/b") || !slices.Contains(c.words, "~/.ssh") {
		t.Errorf("words %q", c.words)
	}
	// Lines bash reads differently, or that do not parse, have no segments.
	for _, in := range []string{"ls\r#; id", "ls\x00", "cat <<EOF", "echo 'open", `echo "open`, "echo $(open", "ls \xff"} {
		if c := parseCommand(in); c.err == nil || c.segments != nil || !c.opaque {
			t.Errorf("parseCommand(%q) = %q err=%v, want an error and no segments", in, c.segments, c.err)
		}
	}
}

func TestDenyViews(t *testing.T) {
	tests := []struct {
		in       string
		want     [][]string
		unproven bool
	}{
		{"git push", [][]string{{"git", "push"}}, false},
		{"A=1 B=2 /usr/bin/git -C dir -c k=v --no-pager push", [][]string{{"git", "push"}}, false},
		{"sudo -u root env X=1 nice -n 5 git push", [][]string{{"git", "push"}}, false},
		{"timeout -s KILL 10s npm publish", [][]string{{"npm", "publish"}}, false},
		{"sh -c 'ls; git push'", [][]string{{"sh", "-c", "ls; git push"}, {"ls"}, {"git", "push"}}, false},
		{"echo $(docker push x)", [][]string{{"echo", unprovenMark + "$(docker push x)"}, {"docker", "push", "x"}}, true},
		{"eval 'git push'", [][]string{{"eval", "git push"}, {"git", "push"}}, false},
		{"for r in a; do git push; done", [][]string{{"git", "push"}}, false},
		{"f() { git push; }", [][]string{{"git", "push"}}, false},
		{`sh -c "git push $HOME"`, [][]string{{"sh", "-c", "git push " + homeRef}, {"git", "push", homeRef}}, true},
		{"$G push", [][]string{{unprovenMark + "$G", "push"}}, true},
		{"ls\r; git push", nil, true},
		{"sudo", nil, false},
	}
	for _, tc := range tests {
		got, unproven := denyViews(tc.in, 0)
		if !reflect.DeepEqual(got, tc.want) || (len(unproven) > 0) != tc.unproven {
			t.Errorf("denyViews(%q) = %q unproven %q, want %q unproven=%v", tc.in, got, unproven, tc.want, tc.unproven)
		}
	}
	// Nesting is followed only so deep, and deeper is unproven.
	deep := "sh -c 'sh -c \"eval eval eval eval eval git push\"'"
	views, unproven := denyViews(deep, 0)
	for _, v := range views {
		if reflect.DeepEqual(v, []string{"git", "push"}) {
			t.Errorf("denyViews followed %q deeper than maxDepth", deep)
		}
	}
	if !slices.Contains(unproven, tooDeep) {
		t.Errorf("denyViews(%q): unproven %q, want %q", deep, unproven, tooDeep)
	}
}
