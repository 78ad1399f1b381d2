// Package trust is intentq's one trust boundary: the access token every client presents to the
// embedded Temporal server, the Web UI and the codec; the private-file rule for secrets; and the
// Host/Origin allowlist that keeps web pages (DNS rebinding) out of loopback listeners.
//
// Loopback is not a boundary: other users of the machine and any web page the person opens can
// reach 127.0.0.1. Every listener intentq runs passes its requests through Guard (HTTP) or checks
// TokenEqual (gRPC), and every secret file is read through ReadSecretFile. A cookie, which the
// browser also sends to other users' servers on other ports, counts only on a connection of the
// user it belongs to (PeerUID, peer.go).
package trust

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentq/intentq/internal/base/private"
)

// TokenFile is the access token's name inside data_dir.
const TokenFile = "access.token"

// TokenPath is where the access token of the intentq whose data_dir is dataDir lives.
func TokenPath(dataDir string) string { return filepath.Join(dataDir, TokenFile) }

// tokenBytes is the token's entropy: 32 random bytes, 64 hex characters.
const tokenBytes = 32

// EnsureToken returns the access token at path, creating it (0600, its folder 0700) when it is
// missing, and making a new one when the file is empty or damaged (EnsureTokenNoting says so;
// the worker logs it). An existing token that group or others may read is refused: it may have
// leaked, and the person must rotate it (delete the file and restart the worker).
func EnsureToken(path string) (string, error) {
	tok, _, err := EnsureTokenNoting(path)
	return tok, err
}

// TokenRenewal says that the access token file was found empty or damaged and a new token
// replaced it.
type TokenRenewal struct {
	// Path is the token file.
	Path string
	// Found says what was wrong with the old one: "empty", or "damaged (...)".
	Found string
}

// String is the renewal as the worker logs it: what happened, and who must reconnect.
func (r *TokenRenewal) String() string {
	return fmt.Sprintf("the access token %s was %s (a write that never reached the disk: a crash or a disk error); "+
		"a new token replaces it: clients holding the old one (a running `starter mcp`, a second worker's api_key_file, "+
		"hooks already running) must restart, and the browser logs in again with `starter ui`", r.Path, r.Found)
}

// EnsureTokenNoting is EnsureToken that also reports a renewal: when the file at path is empty
// or damaged (not 64 hexadecimal characters), a new token is written in its place and renewal
// says what was found; nil otherwise. Tokens are written durably (private.CreateSecret,
// private.WriteSecret): a crash or a disk error leaves the old file or the new one, never an
// empty one.
func EnsureTokenNoting(path string) (tok string, renewal *TokenRenewal, err error) {
	tok, err = ReadSecretFile(path)
	switch {
	case err == nil && validToken(tok):
		return tok, nil, nil
	case err == nil:
		renewal = &TokenRenewal{Path: path, Found: fmt.Sprintf("damaged (%d characters, not %d hexadecimal ones)", len(tok), 2*tokenBytes)}
	case errors.Is(err, ErrEmptySecret):
		renewal = &TokenRenewal{Path: path, Found: "empty"}
	case !errors.Is(err, fs.ErrNotExist):
		return "", nil, err
	}
	tok, err = newToken()
	if err != nil {
		return "", nil, err
	}
	if renewal != nil {
		// One worker per data_dir (instance.Acquire) does this: no other process replaces it now.
		if err := private.WriteSecret(path, []byte(tok+"\n")); err != nil {
			return "", nil, fmt.Errorf("access token %s was %s; writing a new one failed: %w", path, renewal.Found, err)
		}
		return tok, renewal, nil
	}
	// Not there yet: two processes starting at once agree on the first one's token.
	if err := private.CreateSecret(path, []byte(tok+"\n")); errors.Is(err, fs.ErrExist) {
		tok, err = ReadSecretFile(path)
		return tok, nil, err
	} else if err != nil {
		return "", nil, fmt.Errorf("access token %s: %w", path, err)
	}
	return tok, nil, nil
}

// newToken is a fresh access token: tokenBytes random bytes in hexadecimal.
func newToken() (string, error) {
	buf := make([]byte, tokenBytes)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("access token: %w", err)
	}
	return hex.EncodeToString(buf), nil
}

// validToken reports whether tok has the form of a token EnsureToken made.
func validToken(tok string) bool {
	if len(tok) != 2*tokenBytes {
		return false
	}
	_, err := hex.DecodeString(tok)
	return err == nil
}

// ReadToken reads the access token at path (see ReadSecretFile). A missing file says that the
// worker has not started yet with this data_dir.
func ReadToken(path string) (string, error) {
	tok, err := ReadSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("access token %s does not exist: start the worker once (it creates the token), or check data_dir: %w", path, err)
	}
	if errors.Is(err, ErrEmptySecret) {
		return "", fmt.Errorf("%w: restart the worker, which makes a new token (then restart this client)", err)
	}
	return tok, err
}

// ReadSecretFile reads a secret from a file that only its owner may read: a file group or others
// can read is refused with an error that says how to fix it, and so is an empty one. Surrounding
// white space is trimmed.
func ReadSecretFile(path string) (string, error) {
	if err := CheckPrivate(path); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", fmt.Errorf("%s is %w", path, ErrEmptySecret)
	}
	return v, nil
}

// ErrEmptySecret marks a secret file that holds nothing (its text is "empty").
var ErrEmptySecret = errors.New("empty")

// ErrNotPrivate marks a secret file or folder that group or others may access.
var ErrNotPrivate = errors.New("not private")

// CheckPrivate fails when path (after symbolic links) does not exist, or when group or others
// have any access to it (mode & 077): the error wraps ErrNotPrivate and names the chmod that fixes it.
func CheckPrivate(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("secret file: %w", err)
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, which lets other users read it: run `chmod 600 %s` (and rotate the secret if others may have read it): %w",
			path, mode, path, ErrNotPrivate)
	}
	return nil
}

// TokenEqual compares a presented credential with the expected token in constant time. An empty
// expected token matches nothing.
func TokenEqual(got, want string) bool {
	if want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// BearerToken extracts the token of an "Authorization: Bearer <token>" value ("" when the value
// is not of that form).
func BearerToken(header string) string {
	const prefix = "bearer "
	if len(header) < len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(header[len(prefix):])
}
