package encryption

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/intentq/intentq/internal/testkit/diskfault"
)

func keyring(t *testing.T, lines ...string) *Keyring {
	t.Helper()
	k, err := ParseKeyring(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newLine(t *testing.T) string {
	t.Helper()
	_, line, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// Every payload leaves encrypted (no plaintext, the key's id in the metadata) and comes back
// as it was; after a rotation the old key still decrypts what it encrypted.
func TestRoundTripAndRotation(t *testing.T) {
	oldLine := newLine(t)
	old := keyring(t, oldLine)
	dc := DataConverter(old)
	p, err := dc.ToPayload(map[string]string{"text": "the secret deploy plan"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.GetData(), []byte("secret")) || string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding ||
		string(p.GetMetadata()[MetadataKeyID]) != old.Current() {
		t.Fatalf("payload not encrypted: %v", p)
	}
	rotated := keyring(t, oldLine, newLine(t))
	if rotated.Current() == old.Current() {
		t.Fatal("the newest key must encrypt")
	}
	var got map[string]string
	if err := DataConverter(rotated).FromPayload(p, &got); err != nil || got["text"] != "the secret deploy plan" {
		t.Fatalf("decoded %v, %v", got, err)
	}
	p2, _ := DataConverter(rotated).ToPayload("x")
	if string(p2.GetMetadata()[MetadataKeyID]) != rotated.Current() {
		t.Errorf("encrypted with %s, want the newest key", p2.GetMetadata()[MetadataKeyID])
	}
	if _, err := old.Decode([]*commonpb.Payload{p2}); err == nil || !strings.Contains(err.Error(), "not in the keyring") {
		t.Errorf("a key not in the keyring: %v", err)
	}
}

// Payloads recorded before encryption pass through (their histories replay); a tampered one
// fails instead of decoding to something else.
func TestPassThroughAndTamper(t *testing.T) {
	k := keyring(t, newLine(t))
	plain, _ := converter.GetDefaultDataConverter().ToPayload("recorded before encryption")
	out, err := k.Decode([]*commonpb.Payload{plain})
	if err != nil || out[0] != plain {
		t.Fatalf("pass through: %v %v", out, err)
	}
	enc, _ := k.Encode([]*commonpb.Payload{plain})
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	if _, err := k.Decode(enc); err == nil {
		t.Error("a tampered payload decoded")
	}
	short := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetadataKeyID: []byte(k.Current())}, Data: []byte{1}}
	if _, err := k.Decode([]*commonpb.Payload{short}); err == nil {
		t.Error("a short payload decoded")
	}
}

func TestKeyringFileAndErrors(t *testing.T) {
	for name, text := range map[string]string{
		"empty":   "# nothing\n",
		"no id":   ":" + strings.Repeat("A", 44),
		"short":   "k1:c2hvcnQ=",
		"not b64": "k1:!!!",
	} {
		if _, err := ParseKeyring(strings.NewReader(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	path := filepath.Join(t.TempDir(), "keys", "encryption.keys")
	first, err := AppendKey(path)
	if err != nil {
		t.Fatal(err)
	}
	second, err := AppendKey(path)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %o", info.Mode().Perm())
	}
	k, err := LoadKeyring(path)
	if err != nil || k.Current() != second || k.keys[first] == nil {
		t.Fatalf("keyring %v %v", k, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file others can read: %v", err)
	}
	if _, err := LoadKeyring(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "starter keygen") {
		t.Errorf("missing key file: %v", err)
	}
}

// The codec endpoint speaks the SDK's remote codec protocol (what the Web UI and tools use), and
// answers CORS for the Web UI's origin only.
func TestCodecHandler(t *testing.T) {
	k := keyring(t, newLine(t))
	srv := httptest.NewServer(CodecHandler(k, []string{"http://127.0.0.1:8233"}))
	defer srv.Close()
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/codec"})
	plain, _ := converter.GetDefaultDataConverter().ToPayload("hello from the phone")
	enc, err := k.Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := remote.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &s); err != nil || s != "hello from the phone" {
		t.Fatalf("decoded %q %v", s, err)
	}
	back, err := remote.Encode(dec)
	if err != nil || string(back[0].GetMetadata()[converter.MetadataEncoding]) != Encoding {
		t.Fatalf("encode: %v %v", back, err)
	}

	for origin, allowed := range map[string]bool{"http://127.0.0.1:8233": true, "http://evil.example": false} {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin") == origin; got != allowed {
			t.Errorf("origin %s: allowed %v, want %v", origin, got, allowed)
		}
	}
	resp, err := http.Post(srv.URL+"/codec/decode", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed request: %d", resp.StatusCode)
	}
}

// Strict (what the worker's clients and the codec endpoint use) refuses payloads it did not
// encrypt: anyone who can write to the namespace could have written them. The data converter
// built on it refuses a forged plain input; encrypted ones still decode.
func TestStrictRefusesPlainPayloads(t *testing.T) {
	k := keyring(t, newLine(t))
	plain, _ := converter.GetDefaultDataConverter().ToPayload("run /bin/sh")
	if _, err := k.Strict().Decode([]*commonpb.Payload{plain}); !errors.Is(err, ErrNotEncrypted) {
		t.Fatalf("strict decode of a plain payload: %v, want ErrNotEncrypted", err)
	}
	enc, err := k.Strict().Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if dec, err := k.Strict().Decode(enc); err != nil || !bytes.Equal(dec[0].GetData(), plain.GetData()) {
		t.Fatalf("strict round trip: %v %v", dec, err)
	}
	var s string
	if err := StrictDataConverter(k).FromPayload(plain, &s); !errors.Is(err, ErrNotEncrypted) {
		t.Errorf("strict converter read a plain payload: %q %v", s, err)
	}
	if err := DataConverter(k).FromPayload(plain, &s); err != nil || s != "run /bin/sh" {
		t.Errorf("lenient converter (search attributes, accept_plain): %q %v", s, err)
	}

	srv := httptest.NewServer(CodecHandler(k.Strict(), nil))
	defer srv.Close()
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{plain}})
	resp, err := http.Post(srv.URL+"/codec/decode", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "not encrypted") {
		t.Errorf("codec endpoint on a plain payload: %d %s, want 400 not encrypted", resp.StatusCode, msg)
	}
}

// The keyring file must be private: the error names the chmod.
func TestKeyringFileMustBePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(newLine(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("LoadKeyring of a 0644 file: %v", err)
	}
}

// Issue 61: a keyring whose new line was cut by a crash or a full disk made every key unreadable
// (the line does not parse, and the keyring with it). A writer that dies in the middle of
// AppendKey leaves the old keyring whole; the next AppendKey works.
func TestAppendKeyThatDiesLeavesTheKeyringWhole(t *testing.T) {
	if path := os.Getenv("ENCRYPTION_APPEND_UNDER_LIMIT"); path != "" {
		info, err := os.Stat(path)
		if err == nil {
			err = diskfault.LimitWrites(uint64(info.Size())+10, true)
		}
		if err == nil {
			_, err = AppendKey(path)
		}
		println("AppendKey did not die at its write:", fmt.Sprint(err))
		os.Exit(2)
	}
	path := filepath.Join(t.TempDir(), "encryption.keys")
	first, err := AppendKey(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAppendKeyThatDiesLeavesTheKeyringWhole$")
	cmd.Env = append(os.Environ(), "ENCRYPTION_APPEND_UNDER_LIMIT="+path)
	if out, err := cmd.CombinedOutput(); !diskfault.Killed(err) {
		t.Fatalf("the writer did not die at its write: %v\n%s", err, out)
	}
	k, err := LoadKeyring(path)
	if err != nil || k.Current() != first {
		t.Fatalf("after a crash in AppendKey: %v, %v; want the old keyring whole", k, err)
	}
	second, err := AppendKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKeyring(path); err != nil || k.Current() != second || k.keys[first] == nil {
		t.Fatalf("the next AppendKey: %v, %v", k, err)
	}
}
