package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Test secrets are built from pieces so that no scanner mistakes this file for a leak.
var (
	ghp        = "ghp_" + strings.Repeat("a1B2", 9) // 36 alphanumerics
	gho        = "gho_" + strings.Repeat("Z9y8", 9)
	ghu        = "ghu_" + strings.Repeat("Q7w6", 9)
	ghs        = "ghs_" + strings.Repeat("E5r4", 9)
	ghr        = "ghr_" + strings.Repeat("T3y2", 9)
	githubPAT  = "github_pat_" + "11ABCDEFG0123456789abc" + "_" + strings.Repeat("x9Y8z7", 9) + "w6V5u"
	antAPI     = "sk-ant-" + "api03-" + strings.Repeat("Ab1_-Cd2", 11) + "AA"
	antShort   = "sk-ant-" + strings.Repeat("k", 20)
	awsID      = "AKIA" + "IOSFODNN7EXAMPLE"
	awsTemp    = "ASIA" + "Y34FZKBOKMUTVV7A"
	awsSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
	jwt        = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
	pemRSA     = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabcdef==\n-----END RSA PRIVATE KEY-----"
	pemOpenSSH = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
	pemEC      = "-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----"
	pemDSA     = "-----BEGIN DSA " + "PRIVATE KEY-----\nMIIBuwIBAAKBgQ\n-----END DSA PRIVATE KEY-----"
	pemPlain   = "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----"
	pemEnc     = "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----\nMIIFHDBOBgkqhk\n-----END ENCRYPTED PRIVATE KEY-----"
)

func TestSecretsTable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// GitHub.
		{"ghp", "token " + ghp + " here", "token [masked:github-token] here"},
		{"gho", gho, "[masked:github-token]"},
		{"ghu", "x=" + ghu, "x=[masked:github-token]"},
		{"ghs", "(" + ghs + ")", "([masked:github-token])"},
		{"ghr", ghr + ".", "[masked:github-token]."},
		{"ghp longer", ghp + "XYZ", "[masked:github-token]"},
		{"github_pat", "GH_TOKEN=" + githubPAT, "GH_TOKEN=[masked:github-token]"},
		{"ghp in url", "https://" + ghp + "@github.com/o/r", "https://[masked:github-token]@github.com/o/r"},
		{"ghp short", "ghp_short", "ghp_short"},
		{"ghp 35", "ghp_" + strings.Repeat("a", 35), "ghp_" + strings.Repeat("a", 35)},
		{"ghx not a prefix", "ghx_" + strings.Repeat("a1B2", 9), "ghx_" + strings.Repeat("a1B2", 9)},
		{"github_pat short", "github_pat_example", "github_pat_example"},

		// Anthropic.
		{"sk-ant-api03", "ANTHROPIC_API_KEY=" + antAPI, "ANTHROPIC_API_KEY=[masked:anthropic-key]"},
		{"sk-ant- 20", "key: " + antShort + "\n", "key: [masked:anthropic-key]\n"},
		{"sk-ant quoted", `{"key":"` + antAPI + `"}`, `{"key":"[masked:anthropic-key]"}`},
		{"sk-ant short", "sk-ant-api03-short", "sk-ant-api03-short"},
		{"sk-ant prose", "keys look like sk-ant-... and are secret", "keys look like sk-ant-... and are secret"},
		{"openai key untouched", "sk-proj-abc", "sk-proj-abc"},

		// AWS.
		{"AKIA", "aws_access_key_id = " + awsID, "aws_access_key_id = [masked:aws-access-key]"},
		{"ASIA", awsTemp + ",", "[masked:aws-access-key],"},
		{"AWS secret", "aws_secret_access_key = " + awsSecret + "\n", "aws_secret_access_key = [masked:aws-secret-key]\n"},
		{"AWS secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "AWS_SECRET_ACCESS_KEY=[masked:aws-secret-key]"},
		{"AWS secret json", `"SecretAccessKey": "` + awsSecret + `"`, `"SecretAccessKey": "[masked:aws-secret-key]"`},
		{"AKIA alone", "AKIA", "AKIA"},
		{"AKIA short", "AKIA1234", "AKIA1234"},
		{"AKIA in word", "X" + awsID, "X" + awsID},
		{"AKIA too long", awsID + "X", awsID + "X"},
		{"AKIA lower", "AKIAiosfodnn7example", "AKIAiosfodnn7example"},
		{"40 chars without name", awsSecret, awsSecret},

		// Bearer.
		{"bearer header", "Authorization: Bearer " + jwt, "Authorization: Bearer [masked:bearer-token]"},
		{"bearer lower", "authorization: bearer abcdef123456", "authorization: bearer [masked:bearer-token]"},
		{"bearer upper", "BEARER Zx9-Yw8_Vu7", "BEARER [masked:bearer-token]"},
		{"bearer curl", `curl -H "Authorization: Bearer abcdefghij" x`, `curl -H "Authorization: Bearer [masked:bearer-token]" x`},
		{"bearer json", `{"authorization":"Bearer tokenvalue"}`, `{"authorization":"Bearer [masked:bearer-token]"}`},
		{"bearer text", "use Bearer abc.def.ghi1 now.", "use Bearer [masked:bearer-token] now."},
		{"bearer padding", "Bearer dG9rZW4gdmFsdWU=", "Bearer [masked:bearer-token]"},
		{"bearer tab", "Bearer\tR4nd0mT0k3n", "Bearer\t[masked:bearer-token]"},
		{"bearer long word", "Bearer " + strings.Repeat("q", 30), "Bearer [masked:bearer-token]"},
		{"bearer ghp", "Authorization: Bearer " + ghp, "Authorization: Bearer [masked:github-token]"},
		{"bearer prose", "the bearer of bad news", "the bearer of bad news"},
		{"bearer prose long word", "a bearer instrument is payable", "a bearer instrument is payable"},
		{"bearer capital word", "Bearer Authentication is a scheme", "Bearer Authentication is a scheme"},
		{"bearer short", "Bearer abc123", "Bearer abc123"},
		{"bearer variable", `-H "Authorization: Bearer $TOKEN"`, `-H "Authorization: Bearer $TOKEN"`},
		{"bearer placeholder", "Bearer <token>", "Bearer <token>"},
		{"bearer no space", "Bearerabcdef123", "Bearerabcdef123"},
		{"bearer in word", "cupbearer abcdef123", "cupbearer abcdef123"},
		{"bearer newline", "bearer\nabcdef123", "bearer\nabcdef123"},
		{"bearer sentence end", "send Bearer abc123xyz.", "send Bearer [masked:bearer-token]."},

		// Private keys.
		{"rsa", "key:\n" + pemRSA + "\nafter", "key:\n[masked:private-key]\nafter"},
		{"openssh", pemOpenSSH, "[masked:private-key]"},
		{"ec", pemEC + "\n", "[masked:private-key]\n"},
		{"dsa", pemDSA, "[masked:private-key]"},
		{"plain", pemPlain, "[masked:private-key]"},
		{"encrypted", pemEnc, "[masked:private-key]"},
		{"pgp", "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\nok",
			"[masked:private-key]\nok"},
		{"json escaped", `{"k":"` + strings.ReplaceAll(pemRSA, "\n", `\n`) + `\n"}`, `{"k":"[masked:private-key]\n"}`},
		{"unterminated", "a\n-----BEGIN RSA " + "PRIVATE KEY-----\nMIIE\nrest of text", "a\n[masked:private-key]"},
		{"mismatched end", "-----BEGIN RSA " + "PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\ntail",
			"[masked:private-key]"},
		{"two keys", pemRSA + "\nmid\n" + pemEC, "[masked:private-key]\nmid\n[masked:private-key]"},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		{"prose private key", "never paste a private key here", "never paste a private key here"},

		// Ordinary text.
		{"empty", "", ""},
		{"plain", "hello, world", "hello, world"},
		{"unicode", "grüße ☃ 日本語 ghp_ AKIA", "grüße ☃ 日本語 ghp_ AKIA"},
		{"masked", "[masked:github-token] [masked:private-key]", "[masked:github-token] [masked:private-key]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Secrets(tc.in)
			if got != tc.want {
				t.Fatalf("Secrets(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := Secrets(got); again != got {
				t.Fatalf("not idempotent: %q -> %q", got, again)
			}
			if Contains(got) {
				t.Fatalf("Contains(%q) after masking", got)
			}
			if wantSecret := tc.in != tc.want; Contains(tc.in) != wantSecret {
				t.Fatalf("Contains(%q) = %v, want %v", tc.in, !wantSecret, wantSecret)
			}
		})
	}
}

func TestSecretsMixed(t *testing.T) {
	in := strings.Join([]string{
		"deploy log 🚀",
		"GITHUB_TOKEN=" + ghp,
		"curl -H 'Authorization: Bearer " + jwt + "' https://api.example.com",
		"ANTHROPIC_API_KEY=" + antAPI,
		"[default]\naws_access_key_id=" + awsID + "\naws_secret_access_key=" + awsSecret,
		pemOpenSSH,
		"done: the bearer of good news, ghp_short, AKIA.",
	}, "\n")
	want := strings.Join([]string{
		"deploy log 🚀",
		"GITHUB_TOKEN=[masked:github-token]",
		"curl -H 'Authorization: Bearer [masked:bearer-token]' https://api.example.com",
		"ANTHROPIC_API_KEY=[masked:anthropic-key]",
		"[default]\naws_access_key_id=[masked:aws-access-key]\naws_secret_access_key=[masked:aws-secret-key]",
		"[masked:private-key]",
		"done: the bearer of good news, ghp_short, AKIA.",
	}, "\n")
	got := Secrets(in)
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, secret := range []string{ghp, jwt, antAPI, awsID, awsSecret, "b3BlbnNzaC1rZXktdjEAAAAA"} {
		if strings.Contains(got, secret) {
			t.Errorf("output still holds %q", secret)
		}
	}
}

func TestSecretsAdjacentAndOverlapping(t *testing.T) {
	for _, in := range []string{
		ghp + ghp,
		awsID + " " + awsTemp,
		"Bearer " + antAPI,
		"Bearer xyz12345" + githubPAT,
		pemRSA + pemRSA,
		"sk-ant-" + ghp + strings.Repeat("z", 20),
		awsID + "\n" + pemEC,
		"Bearer abcdefgh1=" + awsID,
	} {
		got := Secrets(in)
		if Contains(got) || Secrets(got) != got {
			t.Errorf("Secrets(%q) = %q still holds a secret or is not a fixpoint", in, got)
		}
		if !strings.Contains(got, "[masked:") {
			t.Errorf("Secrets(%q) = %q masked nothing", in, got)
		}
	}
}

func TestSecretsKeepsInvalidUTF8Bytes(t *testing.T) {
	in := "\xff\xfe " + ghp + " \xc3"
	got := Secrets(in)
	if got != "\xff\xfe [masked:github-token] \xc3" {
		t.Fatalf("got %q", got)
	}
}

func FuzzSecrets(f *testing.F) {
	seeds := []string{
		"", "hello", ghp, gho + ghu, githubPAT, antAPI, antShort, awsID, awsTemp,
		"aws_secret_access_key=" + awsSecret, "Authorization: Bearer " + jwt, "bearer of news",
		pemRSA, pemOpenSSH, "-----BEGIN " + "PRIVATE KEY-----\nunterminated", "Bearer abcdefgh1=" + awsID,
		"grüße ☃ " + ghp + " 日本語", "[masked:github-token]", "\xff" + ghs, "AKIA",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Secrets(in)
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 from valid input %q: %q", in, out)
		}
		if again := Secrets(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
		if Contains(out) {
			t.Fatalf("Contains(Secrets(%q)) = true: %q", in, out)
		}
		if !Contains(in) && out != in {
			t.Fatalf("changed text without secrets: %q -> %q", in, out)
		}
	})
}

// mixedText is about 10 KB of log-like text with a few secrets of each kind.
func mixedText() string {
	var b strings.Builder
	lines := []string{
		"2024-05-01T12:00:00Z INFO worker started session=secretary attempt=1 duration=1.2s",
		"the quick brown fox jumps over the lazy dog; grüße aus München ☃",
		"GET /v1/sessions/abc/prompts 200 Authorization: Bearer " + jwt,
		"export GITHUB_TOKEN=" + ghp,
		"tool_use Bash(git status) -> clean working tree, nothing to commit",
		"ANTHROPIC_API_KEY=" + antAPI + " AWS " + awsID,
		"a bearer instrument is payable to whoever holds it; see ghp_short and AKIA docs",
	}
	for i := 0; b.Len() < 10*1024; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
		if i == 40 {
			b.WriteString(pemOpenSSH)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func BenchmarkSecrets(b *testing.B) {
	in := mixedText()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Secrets(in)
	}
}

func BenchmarkSecretsClean(b *testing.B) {
	in := strings.Repeat("the quick brown fox jumps over the lazy dog, 12345 times; ", 180)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Secrets(in)
	}
}
