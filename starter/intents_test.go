package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Issue 23: message text need not be in argv (visible in `ps`): it comes from --text-file or
// standard input; text on the command line still works, "-" there reads standard input, and
// giving it twice is a usage error.
func TestReadText(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "text")
	if err := os.WriteFile(file, []byte("from the file\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inline, dash := "on the command line", "-"
	for _, c := range []struct {
		name   string
		inline *string
		file   string
		stdin  string
		want   string
	}{
		{"stdin by default", nil, "", "from stdin\n", "from stdin"},
		{"--text-file", nil, file, "not this", "from the file\nsecond line"},
		{"--text-file -", nil, "-", "from stdin\n\n", "from stdin\n"},
		{"inline", &inline, "", "not this", "on the command line"},
		{"inline -", &dash, "", "from stdin", "from stdin"},
	} {
		cmd := &cobra.Command{}
		cmd.SetIn(strings.NewReader(c.stdin))
		got, err := readText(cmd, "text", c.inline, c.file, 1<<10)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
	cmd := &cobra.Command{}
	cmd.SetIn(strings.NewReader(""))
	if _, err := readText(cmd, "text", &inline, file, 1<<10); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("text given twice: %v", err)
	}
	if _, err := readText(cmd, "text", nil, filepath.Join(dir, "missing"), 1<<10); err == nil {
		t.Error("a missing --text-file was read")
	}
	cmd.SetIn(strings.NewReader(strings.Repeat("x", 11)))
	if _, err := readText(cmd, "text", nil, "", 10); err == nil || !strings.Contains(err.Error(), "longer than 10 bytes") {
		t.Errorf("text over the limit: %v", err)
	}
}

// record, reply and prompt take --text-file and no longer need the text on the command line;
// where they still take it, their help says it shows in `ps`.
func TestTextCommandsTakeTextFile(t *testing.T) {
	for _, c := range []struct {
		cmd      *cobra.Command
		args     [][]string
		refused  [][]string
		psInHelp func(*cobra.Command) string
	}{
		{newRecord(), [][]string{{}}, [][]string{{"x"}}, func(c *cobra.Command) string { return c.Flags().Lookup("text").Usage }},
		{newReply(), [][]string{{"42/7"}, {"42/7", "-"}, {"42/7", "answer"}}, [][]string{{}, {"42/7", "a", "b"}}, func(c *cobra.Command) string { return c.Long }},
		{newPrompt(), [][]string{{}, {"-"}, {"do it"}}, [][]string{{"a", "b"}}, func(c *cobra.Command) string { return c.Long }},
	} {
		name := c.cmd.Name()
		if c.cmd.Flags().Lookup("text-file") == nil {
			t.Errorf("%s has no --text-file", name)
		}
		if !strings.Contains(c.psInHelp(c.cmd), "`ps`") {
			t.Errorf("%s: the help of text on the command line does not say it shows in ps", name)
		}
		for _, a := range c.args {
			if err := c.cmd.Args(c.cmd, a); err != nil {
				t.Errorf("%s %q: %v", name, a, err)
			}
		}
		for _, a := range c.refused {
			if err := c.cmd.Args(c.cmd, a); err == nil {
				t.Errorf("%s %q accepted", name, a)
			}
		}
	}
	// record without --text reads standard input: only --chat and --msg are required.
	cmd := newRecord()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--msg", "1"})
	cmd.SetIn(strings.NewReader("text"))
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "missing --chat") || strings.Contains(strings.SplitN(err.Error(), "\n", 2)[0], "--text") {
		t.Errorf("record without --chat: %v", err)
	}
}
