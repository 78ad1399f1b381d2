package toolpolicy

import (
	"reflect"
	"testing"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in       string
		segments [][]string
		nested   []string
		opaque   bool
	}{
		{"ls -la", [][]string{{"ls", "-la"}}, nil, false},
		{"  git   log  ", [][]string{{"git", "log"}}, nil, false},
		{"a; b && c || d | e & f", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}}, nil, false},
		{"a\nb", [][]string{{"a"}, {"b"}}, nil, false},
		{`grep 'a;b' "c|d" e\ f`, [][]string{{"grep", "a;b", "c|d", "e f"}}, nil, false},
		{`echo "say \"hi\" \$x"`, [][]string{{"echo", `say "hi" $x`}}, nil, false},
		{"ls # rm -rf /\npwd", [][]string{{"ls"}, {"pwd"}}, nil, false},
		{"a#b", [][]string{{"a#b"}}, nil, false},
		{"cat x 2>/dev/null", [][]string{{"cat", "x"}}, nil, false},
		{"cat x 2>&1", [][]string{{"cat", "x"}}, nil, false},
		{"cat x &>/dev/null", [][]string{{"cat", "x"}}, nil, false},
		{"cat < in", [][]string{{"cat"}}, nil, false},
		{"cat x > out", [][]string{{"cat", "x"}}, nil, true},
		{"cat x >> out", [][]string{{"cat", "x"}}, nil, true},
		{"cat <<EOF", [][]string{{"cat", "EOF"}}, nil, true},
		{"echo $(git push)", [][]string{{"echo", "$(...)"}}, []string{"git push"}, true},
		{"echo \"$(a $(b))\"", [][]string{{"echo", "$(...)"}}, []string{"a $(b)"}, true},
		{"echo `a`", [][]string{{"echo", "$(...)"}}, []string{"a"}, true},
		{"diff <(a) >(b)", [][]string{{"diff", "$(...)", "$(...)"}}, []string{"a", "b"}, true},
		{"(cd x; ls)", [][]string{{"cd", "x"}, {"ls"}}, nil, true},
		{"echo 'open", [][]string{{"echo", "open"}}, nil, true},
		{`echo "open`, [][]string{{"echo", "open"}}, nil, true},
		{"echo $(open", [][]string{{"echo", "$(...)"}}, []string{"open"}, true},
		{"a \\\nb", [][]string{{"a", "b"}}, nil, false},
		{"", nil, nil, false},
		{"echo ''", [][]string{{"echo", ""}}, nil, false},
	}
	for _, tc := range tests {
		c := parseCommand(tc.in)
		if !reflect.DeepEqual(c.segments, tc.segments) || !reflect.DeepEqual(c.nested, tc.nested) || c.opaque != tc.opaque {
			t.Errorf("parseCommand(%q) = %q %q opaque=%v, want %q %q opaque=%v",
				tc.in, c.segments, c.nested, c.opaque, tc.segments, tc.nested, tc.opaque)
		}
	}
}

func TestDenyViews(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string
	}{
		{"git push", [][]string{{"git", "push"}}},
		{"A=1 B=2 /usr/bin/git -C dir -c k=v --no-pager push", [][]string{{"git", "push"}}},
		{"sudo -u root env X=1 nice -n 5 git push", [][]string{{"git", "push"}}},
		{"timeout -s KILL 10s npm publish", [][]string{{"npm", "publish"}}},
		{"sh -c 'ls; git push'", [][]string{{"sh", "-c", "ls; git push"}, {"ls"}, {"git", "push"}}},
		{"echo $(docker push x)", [][]string{{"echo", "$(...)"}, {"docker", "push", "x"}}},
		{"eval 'git push'", [][]string{{"eval", "git push"}, {"git", "push"}}},
		{"sudo", nil},
	}
	for _, tc := range tests {
		if got := denyViews(tc.in, 0); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("denyViews(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Nesting is followed only so deep.
	deep := "sh -c 'sh -c \"eval eval eval eval eval git push\"'"
	for _, v := range denyViews(deep, 0) {
		if reflect.DeepEqual(v, []string{"git", "push"}) {
			t.Errorf("denyViews followed %q deeper than maxDepth", deep)
		}
	}
}
