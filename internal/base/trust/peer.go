package trust

// Who is at the other end of a loopback connection (issue 61, finding 7). Browsers send
// 127.0.0.1's cookies to every port of the host: another local user's HTTP server that the
// person's browser visits receives the Web UI's login cookie, and replaying it, read workflows
// and decrypted messages through the UI's codec. A cookie is therefore accepted only from a
// connection of the local user it belongs to: on Linux the kernel says which uid owns each TCP
// socket (/proc/net/tcp and tcp6, the uid column), looked up once per connection. Where it
// cannot say (no /proc/net/tcp: not Linux; a peer on another machine), ErrPeerUnknown, and
// callers keep the cookie's old rule.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrPeerUnknown says that the owner of a connection's far end cannot be told here: the system
// has no /proc/net/tcp (not Linux), or the peer is on another machine.
var ErrPeerUnknown = errors.New("the connection's local user cannot be told on this system")

// PeerUIDFunc finds the uid of the process that owns the far end of a TCP connection, given the
// connection's addresses as the server sees them (local: the listener's side).
type PeerUIDFunc func(local, remote net.Addr) (uid int, err error)

// procNetTCP are the kernel's tables of TCP sockets, IPv4 then IPv6.
var procNetTCP = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// tcpTimeWait is a socket state in /proc/net/tcp whose uid column is always 0: a closed socket.
const tcpTimeWait = 0x06

// LookupPeerUID is the PeerUIDFunc of Linux: the uid of the socket in /proc/net/tcp or tcp6
// whose local address is the connection's remote one and whose remote address is its local
// one. ErrPeerUnknown when the tables cannot be read (not Linux) or the peer is not a loopback
// address and has no socket on this machine; an error when a peer on this machine is not found.
func LookupPeerUID(local, remote net.Addr) (int, error) {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return 0, ErrPeerUnknown
	}
	read := 0
	for _, table := range procNetTCP {
		data, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("peer of %s: %w", r, err)
		}
		read++
		if uid, ok := findSocket(data, r, l); ok {
			return uid, nil
		}
	}
	if read == 0 || !r.IP.IsLoopback() {
		return 0, ErrPeerUnknown
	}
	return 0, fmt.Errorf("peer %s: no socket of this machine is connected to %s", r, l)
}

// findSocket returns the uid of the socket in table (the text of /proc/net/tcp or tcp6) whose
// local address is self and remote address is peer; TIME_WAIT entries are skipped.
func findSocket(table []byte, self, peer *net.TCPAddr) (uid int, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 512), 64<<10)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		if st, err := strconv.ParseUint(f[3], 16, 8); err != nil || st == tcpTimeWait {
			continue
		}
		if !sameAddr(f[1], self) || !sameAddr(f[2], peer) {
			continue
		}
		u, err := strconv.Atoi(f[7])
		if err != nil {
			continue
		}
		return u, true
	}
	return 0, false
}

// sameAddr reports whether field, an address of /proc/net/tcp ("0100007F:1F90": the IP as
// 32-bit words in the kernel's byte order, the port in hex), is a (an IPv4 address matches its
// IPv4-mapped IPv6 form).
func sameAddr(field string, a *net.TCPAddr) bool {
	ipHex, portHex, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}

// peerKey is the context key of a connection's peer (ConnContext).
type peerKey struct{}

// peerOf is one connection's far end, looked up at most once.
type peerOf struct {
	local, remote net.Addr
	once          sync.Once
	uid           int
	err           error
}

func (p *peerOf) lookup(find PeerUIDFunc) (int, error) {
	p.once.Do(func() { p.uid, p.err = find(p.local, p.remote) })
	return p.uid, p.err
}

// ConnContext is the http.Server.ConnContext of a listener behind a Guard: it keeps each
// connection's addresses in its requests' context, so that the peer's uid is looked up once per
// connection, at its first request that needs it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peerOf{local: c.LocalAddr(), remote: c.RemoteAddr()})
}

// PeerUID is the uid of the process at the far end of r's connection, found by find (nil:
// LookupPeerUID): once per connection when the server set ConnContext, else for this request
// (from r.RemoteAddr and the server's local address). ErrPeerUnknown: it cannot be told here.
func PeerUID(r *http.Request, find PeerUIDFunc) (int, error) {
	if find == nil {
		find = LookupPeerUID
	}
	if p, ok := r.Context().Value(peerKey{}).(*peerOf); ok {
		return p.lookup(find)
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	var remote net.Addr
	if a, err := net.ResolveTCPAddr("tcp", r.RemoteAddr); err == nil {
		remote = a
	}
	return find(local, remote) // LookupPeerUID: ErrPeerUnknown without both
}

// PeerIsUser reports whether r's connection comes from a process of uid, or, where that cannot
// be told (ErrPeerUnknown), true: the rule before this check.
func PeerIsUser(r *http.Request, uid int, find PeerUIDFunc) bool {
	got, err := PeerUID(r, find)
	if errors.Is(err, ErrPeerUnknown) {
		return true
	}
	return err == nil && got == uid
}
