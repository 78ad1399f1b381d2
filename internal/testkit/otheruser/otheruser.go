// Package otheruser plays another local user of the machine (uid 65534, nobody) in tests of
// intentq's boundary: a real process of that user that connects to a loopback listener. Only
// root can start one; elsewhere the test that needs it is skipped.
package otheruser

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// UID is the other user's uid.
const UID = 65534

// Request sends raw (an HTTP request, CRLFs included; ask for "Connection: close") to addr
// (host:port) over TCP from a process of UID (bash's /dev/tcp) and returns the whole answer, read
// until the server closes. It skips the test unless it runs as root.
func Request(t testing.TB, addr, raw string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("playing another local user (uid 65534) needs root")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is not installed: the other user's connection is made with its /dev/tcp")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	const script = `exec 3<>"/dev/tcp/$HOST/$PORT" || exit 3
printf '%s' "$REQUEST" >&3
cat <&3`
	cmd := exec.Command(bash, "-c", script)
	cmd.Dir = "/"
	cmd.Env = []string{"HOST=" + host, "PORT=" + port, "REQUEST=" + raw, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the other user's request: %v (%s)", err, out)
	}
	return string(out)
}
