// Package trust is intentq's one trust boundary: the access token every client presents to the
// embedded Temporal server, the Web UI and the codec; the private-file rule for secrets; and the
// Host/Origin allowlist that keeps web pages (DNS rebinding) out of loopback listeners.
//
// Loopback is not a boundary: other users of the machine and any web page the person opens can
// reach 127.0.0.1. Every listener intentq runs passes its requests through Guard (HTTP) or checks
// TokenEqual (gRPC), and every secret file is read through ReadSecretFile.
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
)

// TokenFile is the access token's name inside data_dir.
const TokenFile = "access.token"

// TokenPath is where the access token of the intentq whose data_dir is dataDir lives.
func TokenPath(dataDir string) string { return filepath.Join(dataDir, TokenFile) }

// tokenBytes is the token's entropy: 32 random bytes, 64 hex characters.
const tokenBytes = 32

// EnsureToken returns the access token at path, creating it (0600, its folder 0700) when it is
// missing. An existing token that group or others may read is refused: it may have leaked, and
// the person must rotate it (delete the file and restart the worker).
func EnsureToken(path string) (string, error) {
	tok, err := ReadSecretFile(path)
	if err == nil {
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	buf := make([]byte, tokenBytes)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("access token: %w", err)
	}
	tok = hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("access token %s: %w", path, err)
	}
	// O_EXCL: two processes starting at once agree on the first one's token.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadSecretFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("access token %s: %w", path, err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return "", fmt.Errorf("access token %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("access token %s: %w", path, err)
	}
	return tok, nil
}

// ReadToken reads the access token at path (see ReadSecretFile). A missing file says that the
// worker has not started yet with this data_dir.
func ReadToken(path string) (string, error) {
	tok, err := ReadSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("access token %s does not exist: start the worker once (it creates the token), or check data_dir: %w", path, err)
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
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

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
