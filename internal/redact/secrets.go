// Masking: secrets in text are replaced with placeholders that name their kind (SPEC P8).
//
// Everything intentq stores, logs, notifies or exports passes through Secrets first: prompts,
// CLI output, ntfy messages, archives. A masked secret reads as "[masked:KIND]", where KIND is
// one of github-token, anthropic-key, aws-access-key, aws-secret-key, bearer-token or
// private-key. Masking is idempotent (masking masked text changes nothing), leaves ordinary text
// alone and keeps valid UTF-8 valid: every replaced span starts and ends at an ASCII byte.

package redact

import (
	"regexp"
	"sort"
	"strings"
)

// Kinds of secret, as they appear in placeholders.
const (
	kindGitHub     = "github-token"
	kindAnthropic  = "anthropic-key"
	kindAWSKeyID   = "aws-access-key"
	kindAWSSecret  = "aws-secret-key"
	kindBearer     = "bearer-token"
	kindPrivateKey = "private-key"
)

// maxPasses bounds the fixpoint loop in Secrets. One pass masks every secret found in its input;
// a further pass only finds something when a replacement changed a word boundary next to a
// secret, which is rare, so two passes are the norm.
const maxPasses = 8

// placeholder is the text that replaces a secret of the given kind.
func placeholder(kind string) string { return "[masked:" + kind + "]" }

// span is a byte range [start, end) of s holding a secret of a kind. prio breaks ties between
// kinds that match the same range (lower wins): a GitHub token after "Bearer " is named as such.
type span struct {
	start, end int
	kind       string
	prio       int
}

// prefixed describes secrets that start with one of a few fixed prefixes followed by at least
// min bytes of a character class. They are found by hand: strings.Index for an anchor, a rare
// substring found at offset in every prefix, is many times faster than Go's regexp on long text.
// None of the classes contains '[' or ']', so a placeholder can never be (part of) a match:
// that is what makes masking idempotent.
type prefixed struct {
	kind     string
	anchor   string
	offset   int
	prefixes []string
	class    func(byte) bool
	min      int
}

var prefixedSecrets = []prefixed{
	// Classic GitHub tokens: ghp_ (personal), gho_ (OAuth), ghu_ (user-to-server),
	// ghs_ (server-to-server), ghr_ (refresh), 36 alphanumerics (GitHub allows them to grow).
	{kind: kindGitHub, anchor: "_", offset: 3, prefixes: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		class: isAlnum, min: 36},
	// Fine-grained personal access tokens: github_pat_ + 22 + "_" + 59; accept any long tail.
	{kind: kindGitHub, anchor: "_pat_", offset: 6, prefixes: []string{"github_pat_"}, class: isWordByte, min: 30},
	// Anthropic API and admin keys: sk-ant-api03-..., sk-ant-admin01-..., sk-ant-... .
	{kind: kindAnthropic, anchor: "-ant-", offset: 2, prefixes: []string{"sk-ant-"}, class: isKeyByte, min: 20},
}

// privateKeyBegin finds the BEGIN line of a PEM or OpenSSH private key block: PRIVATE KEY,
// RSA/EC/DSA/OPENSSH/ENCRYPTED PRIVATE KEY, and PGP PRIVATE KEY BLOCK. Group 1 is the label
// before PRIVATE KEY, group 2 the optional " BLOCK"; the END line must repeat both.
var privateKeyBegin = regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----`)

// Priorities of the kinds when two detectors match the same range.
var priority = map[string]int{
	kindPrivateKey: 0,
	kindGitHub:     1,
	kindAnthropic:  2,
	kindAWSKeyID:   3,
	kindAWSSecret:  4,
	kindBearer:     5,
}

// Secrets returns s with every secret it recognises replaced by "[masked:KIND]":
//   - GitHub tokens: ghp_/gho_/ghu_/ghs_/ghr_ followed by 36 or more alphanumerics, and
//     github_pat_ fine-grained tokens (github-token);
//   - Anthropic keys: sk-ant- followed by 20 or more of [A-Za-z0-9_-] (anthropic-key);
//   - AWS access key IDs: AKIA or ASIA followed by 16 upper-case alphanumerics, as a word
//     (aws-access-key), and 40-character secret access keys written after their name
//     (aws-secret-key);
//   - Bearer tokens: the value after the word Bearer (any case), which is kept; the value must
//     look like a token, so "bearer" in prose is left alone (bearer-token);
//   - private key blocks: "-----BEGIN ... PRIVATE KEY-----" through the matching END line, or to
//     the end of s when the block is not terminated (private-key).
//
// Secrets(Secrets(s)) == Secrets(s), and Contains(Secrets(s)) is false.
func Secrets(s string) string {
	for i := 0; i < maxPasses; i++ {
		spans := find(s, false)
		if len(spans) == 0 {
			return s
		}
		s = replace(s, spans)
	}
	// Not reached in practice (each pass masks what it finds, and a placeholder cannot be part
	// of a secret); if it were, refuse to return anything that still holds a secret.
	if len(find(s, true)) > 0 {
		return placeholder("unknown")
	}
	return s
}

// Contains reports whether s holds any secret Secrets would mask, for callers that refuse to
// store such text rather than mask it.
func Contains(s string) bool {
	return len(find(s, true)) > 0
}

// find returns the secret spans of s, sorted by start and merged where they overlap (the union
// of overlapping spans is masked as the kind of the highest priority among them). With first
// set it stops at the first span found.
func find(s string, first bool) []span {
	var out []span
	add := func(sp span) bool {
		out = append(out, sp)
		return first
	}
	if findPrivateKeys(s, add) {
		return out
	}
	for _, p := range prefixedSecrets {
		if findPrefixed(s, p, add) {
			return out
		}
	}
	if findAWSKeyIDs(s, add) || findAWSSecrets(s, add) || findBearer(s, add) {
		return out
	}
	return merge(out)
}

// merge sorts spans and unites overlapping ones, so that no part of any secret stays visible.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end > b.end
		}
		return a.prio < b.prio
	})
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start >= last.end {
			out = append(out, sp)
			continue
		}
		if sp.end > last.end {
			last.end = sp.end
		}
		if sp.prio < last.prio {
			last.kind, last.prio = sp.kind, sp.prio
		}
	}
	return out
}

// replace returns s with each span (sorted, disjoint) replaced by its placeholder.
func replace(s string, spans []span) string {
	var b strings.Builder
	b.Grow(len(s) + 24*len(spans))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(placeholder(sp.kind))
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// findPrivateKeys reports each private key block of s to add, from its BEGIN line through the
// END line with the same label, or through the end of s when there is none. It returns true as
// soon as add does.
func findPrivateKeys(s string, add func(span) bool) bool {
	pos := 0
	for pos < len(s) {
		m := privateKeyBegin.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			return false
		}
		start, beginEnd := pos+m[0], pos+m[1]
		label := s[pos+m[2] : pos+m[3]]
		block := ""
		if m[4] >= 0 {
			block = s[pos+m[4] : pos+m[5]]
		}
		endMarker := "-----END " + label + "PRIVATE KEY" + block + "-----"
		end := len(s)
		if i := strings.Index(s[beginEnd:], endMarker); i >= 0 {
			end = beginEnd + i + len(endMarker)
		}
		if add(span{start: start, end: end, kind: kindPrivateKey, prio: priority[kindPrivateKey]}) {
			return true
		}
		pos = end
	}
	return false
}

// findPrefixed reports each secret of s described by p to add, with the longest run of p's
// class after the prefix; it returns true as soon as add does.
func findPrefixed(s string, p prefixed, add func(span) bool) bool {
	for pos := 0; ; {
		j := strings.Index(s[pos:], p.anchor)
		if j < 0 {
			return false
		}
		j += pos
		pos = j + 1
		i := j - p.offset
		if i < 0 {
			continue
		}
		end := -1
		for _, prefix := range p.prefixes {
			if strings.HasPrefix(s[i:], prefix) {
				end = i + len(prefix)
				break
			}
		}
		if end < 0 {
			continue
		}
		tail := end
		for end < len(s) && p.class(s[end]) {
			end++
		}
		if end-tail < p.min {
			continue
		}
		if add(span{start: i, end: end, kind: p.kind, prio: priority[p.kind]}) {
			return true
		}
		pos = end
	}
}

// AWS access key IDs are AKIA (long-term) or ASIA (temporary) followed by 16 upper-case
// letters or digits, as a whole word. They are found by hand: a regexp starting with \b has no
// literal prefix to skip ahead with, and runs many times slower on long text.
const awsIDTail = 16

// findAWSKeyIDs reports each AWS access key ID of s to add; it returns true as soon as add does.
func findAWSKeyIDs(s string, add func(span) bool) bool {
	// Look for the rarer "KIA" and "SIA", then for the "A" before them.
	for _, prefix := range [...]string{"AKIA", "ASIA"} {
		for pos := 1; pos < len(s); {
			j := strings.Index(s[pos:], prefix[1:])
			if j < 0 {
				break
			}
			i := pos + j - 1
			pos = i + len(prefix)
			if s[i] != 'A' {
				continue
			}
			end := pos + awsIDTail
			if end > len(s) || (i > 0 && isWordByte(s[i-1])) || (end < len(s) && isWordByte(s[end])) {
				continue
			}
			ok := true
			for _, c := range []byte(s[pos:end]) {
				if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			if add(span{start: i, end: end, kind: kindAWSKeyID, prio: priority[kindAWSKeyID]}) {
				return true
			}
			pos = end
		}
	}
	return false
}

// AWS secret access keys (40 characters of [A-Za-z0-9/+]) have no prefix of their own, so they
// are only masked after their name: aws_secret_access_key = ..., AWS_SECRET_ACCESS_KEY: ...,
// awsSecretAccessKey, "SecretAccessKey": "..." (any case; the underscores are optional, and
// "aws" is required unless there are none).
const awsSecretLen = 40

// findAWSSecrets reports each named AWS secret access key of s to add; it returns true as soon
// as add does.
func findAWSSecrets(s string, add func(span) bool) bool {
	for pos := 0; ; {
		i := indexFold(s, "secret", pos)
		if i < 0 {
			return false
		}
		pos = i + len("secret")
		j, underscores, ok := skipFold(s, pos, "access")
		if !ok {
			continue
		}
		j, u, ok := skipFold(s, j, "key")
		if !ok {
			continue
		}
		underscores += u
		if i >= 1 && s[i-1] == '_' {
			underscores++
			i--
		}
		named := i >= 3 && strings.EqualFold(s[i-3:i], "aws")
		if !named && underscores > 0 {
			continue
		}
		// Separator: optional quote, spaces, ":" or "=", spaces, optional quote.
		if j < len(s) && (s[j] == '"' || s[j] == '\'') {
			j++
		}
		j = skipSpace(s, j)
		if j >= len(s) || (s[j] != ':' && s[j] != '=') {
			continue
		}
		j = skipSpace(s, j+1)
		if j < len(s) && (s[j] == '"' || s[j] == '\'') {
			j++
		}
		end := j
		for end < len(s) && end-j < awsSecretLen && isAWSSecretByte(s[end]) {
			end++
		}
		if end-j != awsSecretLen || (end < len(s) && (isAWSSecretByte(s[end]) || s[end] == '=')) {
			continue
		}
		if add(span{start: j, end: end, kind: kindAWSSecret, prio: priority[kindAWSSecret]}) {
			return true
		}
		pos = end
	}
}

// skipFold matches an optional "_" and then word (lower-case ASCII, any case in s) at s[pos:].
// It returns the index after them, how many underscores it skipped, and whether they matched.
func skipFold(s string, pos int, word string) (int, int, bool) {
	u := 0
	if pos < len(s) && s[pos] == '_' {
		pos++
		u = 1
	}
	if pos+len(word) > len(s) || !strings.EqualFold(s[pos:pos+len(word)], word) {
		return pos, u, false
	}
	return pos + len(word), u, true
}

// skipSpace returns the index of the first byte at or after pos that is not white space in the
// sense of RE2's \s (tab, newline, form feed, carriage return, space).
func skipSpace(s string, pos int) int {
	for pos < len(s) && strings.IndexByte(" \t\n\f\r", s[pos]) >= 0 {
		pos++
	}
	return pos
}

// isAWSSecretByte reports whether c may appear in an AWS secret access key.
func isAWSSecretByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '+'
}

// Bearer tokens are found by hand rather than by a case-insensitive regexp: it is several times
// faster on long text, and the decision whether a value looks like a token needs code anyway.
//
// A value is the RFC 6750 token68 (letters, digits, "-._~+/", then "=" padding) after "bearer"
// and spaces or tabs. It is masked when it has at least minBearer characters (trailing dots,
// which end sentences, are not counted) and looks like a token: it follows "Authorization:",
// or has a character other than a letter, or mixes case beyond a capital initial, or is at
// least longBearer characters long. "the bearer instrument" is prose; "Bearer abc123xyz" is not.
const (
	minBearer  = 8
	longBearer = 24
)

// findBearer reports each bearer token of s to add; it returns true as soon as add does.
func findBearer(s string, add func(span) bool) bool {
	const word = "bearer"
	for pos := 0; ; {
		i := indexFold(s, word, pos)
		if i < 0 {
			return false
		}
		pos = i + len(word)
		if i > 0 && isWordByte(s[i-1]) {
			continue
		}
		j := pos
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == pos {
			continue
		}
		k := j
		for k < len(s) && isToken68(s[k]) {
			k++
		}
		for k < len(s) && s[k] == '=' {
			k++
		}
		end := k
		for end > j && s[end-1] == '.' {
			end--
		}
		if end-j < minBearer || (!afterAuthorization(s, i) && !tokenLike(s[j:end])) {
			continue
		}
		if add(span{start: j, end: end, kind: kindBearer, prio: priority[kindBearer]}) {
			return true
		}
		pos = k
	}
}

// indexFold returns the index of the first occurrence of the lower-case ASCII word in s at or
// after pos, in any case, or -1. It finds candidates for the first byte in either case with
// strings.IndexByte, which is vectorised, and remembers how far each search got.
func indexFold(s, word string, pos int) int {
	lower, upper := word[0], word[0]-('a'-'A')
	nextLower, nextUpper := -1, -1
	for pos+len(word) <= len(s) {
		if nextLower < pos {
			nextLower = indexByteFrom(s, lower, pos)
		}
		if nextUpper < pos {
			nextUpper = indexByteFrom(s, upper, pos)
		}
		i := min(nextLower, nextUpper)
		if i+len(word) > len(s) {
			return -1
		}
		if strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
		pos = i + 1
	}
	return -1
}

// indexByteFrom returns the index of c in s at or after pos, or len(s) when there is none.
func indexByteFrom(s string, c byte, pos int) int {
	if i := strings.IndexByte(s[pos:], c); i >= 0 {
		return pos + i
	}
	return len(s)
}

// afterAuthorization reports whether "bearer" at index i of s follows an Authorization header
// name: `Authorization: Bearer`, `"authorization": "Bearer`, `authorization=Bearer`.
func afterAuthorization(s string, i int) bool {
	const name = "authorization"
	j := i
	for j > 0 && strings.IndexByte(" \t\"':=", s[j-1]) >= 0 {
		j--
	}
	return j < i && j >= len(name) && strings.EqualFold(s[j-len(name):j], name)
}

// tokenLike reports whether v looks like a credential rather than an English word: any
// character other than a letter, upper case after the first letter, or sheer length.
func tokenLike(v string) bool {
	if len(v) >= longBearer {
		return true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
			if i > 0 {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// isToken68 reports whether c may appear in an RFC 6750 bearer token before its "=" padding.
func isToken68(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isKeyByte reports whether c may appear in an Anthropic key: [A-Za-z0-9_-].
func isKeyByte(c byte) bool {
	return isWordByte(c) || c == '-'
}

// isWordByte reports whether c is an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
