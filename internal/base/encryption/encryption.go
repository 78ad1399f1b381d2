// Package encryption keeps message text off an external Temporal cluster (issue 13): a payload
// codec that encrypts every payload intentq writes (workflow inputs, results, signals, updates,
// memos, activity arguments) with AES-256-GCM before it leaves the process, and decrypts it on
// the way back. The key's id travels in each payload's metadata, so keys can rotate: the
// newest key of the keyring encrypts, every key in it decrypts.
//
// GCM authenticates what it decrypts, but a payload that is not encrypted at all carries no
// proof of who wrote it: whoever can write to the namespace could pass plain input to a
// worker, or show the Web UI a forged message. So the worker's clients and the codec endpoint
// use Strict, which refuses every payload this codec did not encrypt; the Keyring itself (and
// DataConverter) passes such payloads through, for histories recorded before encryption was
// turned on (temporal.encryption.accept_plain) and for search attributes, which Temporal
// stores unencrypted.
//
// A keyring is a file (0600) of lines `<id>:<base64 key>`, the newest last (`starter keygen`
// appends one), or one such line in the environment.
package encryption

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/trust"
)

// Metadata of an encrypted payload.
const (
	// Encoding marks a payload this codec encrypted.
	Encoding = "binary/encrypted"
	// MetadataKeyID names the key that encrypted it.
	MetadataKeyID = "encryption-key-id"
)

// KeySize is the AES-256 key size in bytes.
const KeySize = 32

// Keyring holds the keys by id; Current encrypts.
type Keyring struct {
	current string
	keys    map[string]cipher.AEAD
}

// Current is the id of the key that encrypts.
func (k *Keyring) Current() string { return k.current }

// ParseKeyring reads lines `<id>:<base64 key>` (blank lines and # comments skipped); the last
// key encrypts.
func ParseKeyring(r io.Reader) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, encoded, ok := strings.Cut(line, ":")
		if !ok || id == "" {
			return nil, fmt.Errorf("keyring line %d: want <id>:<base64 key>", n)
		}
		raw, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("keyring line %d (key %s): want %d bytes in base64", n, id, KeySize)
		}
		aead, err := newAEAD(raw)
		if err != nil {
			return nil, fmt.Errorf("keyring line %d: %w", n, err)
		}
		k.keys[id], k.current = aead, id
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read keyring: %w", err)
	}
	if k.current == "" {
		return nil, errors.New("the keyring holds no key (starter keygen makes one)")
	}
	return k, nil
}

// LoadKeyring reads the keyring from path, which must be private (no access for group or
// others: the key decrypts every message).
func LoadKeyring(path string) (*Keyring, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("encryption key file: %w (starter keygen makes one)", err)
	}
	if err := trust.CheckPrivate(path); err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	k, err := ParseKeyring(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("encryption key file %s: %w", path, err)
	}
	return k, nil
}

// NewKey makes a random key and its line for a keyring; the id is derived from the key.
func NewKey() (id, line string, err error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("generate a key: %w", err)
	}
	sum := sha256.Sum256(raw)
	id = "k" + hex.EncodeToString(sum[:6])
	return id, id + ":" + base64.StdEncoding.EncodeToString(raw), nil
}

// AppendKey adds a new key to the keyring file at path (created 0600 in a 0700 folder), where
// it becomes the key that encrypts; the older keys still decrypt. It returns the new key's id.
// The keyring is rewritten whole and durably (private.WriteSecret): a crash or a disk error
// leaves the old keyring or the new one, never a half-written line that would make every key
// unreadable. A keyring that is a link is written where it points.
func AppendKey(path string) (string, error) {
	id, line, err := NewKey()
	if err != nil {
		return "", err
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read key file: %w", err)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if err := private.WriteSecret(path, append(old, line+"\n"...)); err != nil {
		return "", fmt.Errorf("key file: %w", err)
	}
	return id, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	return cipher.NewGCM(block)
}

// Encode encrypts each payload with the current key: the whole payload (metadata and data)
// becomes the ciphertext of a new payload that names the key.
func (k *Keyring) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := k.keys[k.current]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetadataKeyID: []byte(k.current)},
			Data:     aead.Seal(nonce, nonce, plain, []byte(k.current)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec encrypted and passes others through (recorded
// before encryption was on).
func (k *Keyring) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := k.keys[id]
		if !ok {
			return nil, fmt.Errorf("decrypt payload: key %q is not in the keyring", id)
		}
		data := p.GetData()
		if len(data) < aead.NonceSize() {
			return nil, errors.New("decrypt payload: too short")
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("decrypt payload with key %s: %w", id, err)
		}
		var decoded commonpb.Payload
		if err := proto.Unmarshal(plain, &decoded); err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
		out[i] = &decoded
	}
	return out, nil
}

// DataConverter is the SDK's default converter with every payload encrypted by k; payloads
// that are not encrypted are decoded as they are (see Strict).
func DataConverter(k *Keyring) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), k)
}

// StrictDataConverter is DataConverter refusing payloads that are not encrypted.
func StrictDataConverter(k *Keyring) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), k.Strict())
}

// ErrNotEncrypted marks a payload refused because it is not encrypted.
var ErrNotEncrypted = errors.New("payload is not encrypted: with temporal.encryption on, intentq encrypts every payload it writes, so this one was written by someone else; refused (temporal.encryption.accept_plain: true passes payloads recorded before encryption was turned on)")

// Strict is the codec that encrypts as k does and refuses to decode any payload k did not
// encrypt (ErrNotEncrypted).
func (k *Keyring) Strict() converter.PayloadCodec { return strictCodec{k} }

type strictCodec struct{ k *Keyring }

func (s strictCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return s.k.Encode(payloads)
}

func (s strictCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			return nil, fmt.Errorf("payload %d (encoding %q): %w", i, p.GetMetadata()[converter.MetadataEncoding], ErrNotEncrypted)
		}
	}
	return s.k.Decode(payloads)
}

// MaxCodecBody bounds a codec request.
const MaxCodecBody = 16 << 20

// CodecHandler serves the SDK's remote codec protocol (POST .../encode and .../decode with
// JSON payloads) for the Web UI and tools, with CORS for origins (a Web UI on another origin).
// It decrypts for whoever reaches it: the caller puts it behind trust.Guard (the access
// token), and passes k.Strict() so that it refuses payloads that are not encrypted.
func CodecHandler(codec converter.PayloadCodec, origins []string) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(codec)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(origins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxCodecBody)
		inner.ServeHTTP(w, r)
	})
}
