package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.temporal.io/sdk/temporal"
)

// Error types of Ntfy.Publish, as seen by workflows in ApplicationError.Type().
const (
	// ErrTypeNtfyRejected: ntfy refused the publish (bad token, no access to the topic, bad
	// request, unknown path, too large) or the topic is not a valid ntfy topic. Not retryable.
	ErrTypeNtfyRejected = "NtfyRejected"
	// ErrTypeNtfyNotConfigured: no ntfy URL (or an unusable one) is configured. Not retryable.
	ErrTypeNtfyNotConfigured = "NtfyNotConfigured"
)

// defaultNtfyClient is used when Ntfy.Client is nil.
var defaultNtfyClient = &http.Client{Timeout: 10 * time.Second}

// ntfyTopicRE is ntfy's own rule for topic names.
var ntfyTopicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// errNtfyTemporary marks failures that a later attempt may not meet (429, 5xx).
var errNtfyTemporary = errors.New("temporary ntfy failure")

// Ntfy publishes push notifications.
//
// Register its Publish method by name (RegisterActivityWithOptions(n.Publish, ...)); as a
// struct it also has Configured, which is not an activity signature, so registering the struct
// itself needs SkipInvalidStructFunctions.
type Ntfy struct {
	URL    string       // base URL of the ntfy server, e.g. "https://ntfy.sh"; may have a path
	Token  string       // access token sent as "Authorization: Bearer"; may be empty
	Client *http.Client // nil: a client with a 10 s timeout
	// Sessions resolves a push's session to its topic from the worker's config (the worker's
	// activity always has it: whoever knows a topic reads what is pushed there, so it stays out
	// of workflow input); nil: Topic is taken as it is (the worker's own pushes, tests).
	Sessions *Directory
}

// Push is one notification.
type Push struct {
	// Session names the session whose topic (from the worker's config) the push goes to. Topic
	// is only read from pushes of older builds (and must then be a configured topic).
	Session  string   `json:"session,omitempty"`
	Topic    string   `json:"topic,omitempty"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Priority int      `json:"priority"` // 1 (min) to 5 (urgent); anything else sends no priority
	Tags     []string `json:"tags"`     // ntfy tags or emoji short codes
}

// Configured reports whether a server URL is set.
func (n *Ntfy) Configured() bool { return n != nil && n.URL != "" }

// Publish sends p to <URL>/<topic>.
//
// A 2xx answer is success. 400, 401, 403, 404 and 413 (and the other 4xx answers except 408,
// 425 and 429) give a non-retryable ErrTypeNtfyRejected error naming the status and ntfy's
// error code; 429, 5xx and network errors give plain retryable errors. An empty URL gives a
// non-retryable ErrTypeNtfyNotConfigured error. No error ever contains p.Message.
func (n *Ntfy) Publish(ctx context.Context, p Push) error {
	if !n.Configured() {
		return temporal.NewNonRetryableApplicationError("ntfy is not configured (no URL)", ErrTypeNtfyNotConfigured, nil)
	}
	if n.Sessions != nil {
		if p.Session != "" {
			ep, err := n.Sessions.Lookup(p.Session)
			if err != nil {
				return err
			}
			if ep.NtfyTopic == "" {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %q has no ntfy topic in this worker's config", p.Session), ErrTypeNtfyNotConfigured, nil)
			}
			p.Topic = ep.NtfyTopic
		} else if !n.Sessions.topicKnown(p.Topic) {
			return temporal.NewNonRetryableApplicationError("the push names no session, and its topic is not one this worker's config names: refused", ErrTypeUnknownSession, nil)
		}
	}
	if !ntfyTopicRE.MatchString(p.Topic) {
		return temporal.NewNonRetryableApplicationError(
			"ntfy topic is not valid (1-64 of A-Z a-z 0-9 _ -)", ErrTypeNtfyRejected, nil)
	}
	base, err := url.Parse(n.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return temporal.NewNonRetryableApplicationError(
			"ntfy URL is not an http(s) URL", ErrTypeNtfyNotConfigured, nil)
	}
	target := base.JoinPath(url.PathEscape(p.Topic)).String()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(p.Message))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(
			"ntfy publish: building the request failed", ErrTypeNtfyNotConfigured, nil)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if t := ntfyHeaderValue(p.Title); t != "" {
		req.Header.Set("Title", t)
	}
	if p.Priority >= 1 && p.Priority <= 5 {
		req.Header.Set("Priority", strconv.Itoa(p.Priority))
	}
	var tags []string
	for _, t := range p.Tags {
		if t = strings.TrimSpace(sanitizeHeaderText(t)); t != "" {
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 {
		req.Header.Set("Tags", ntfyHeaderValue(strings.Join(tags, ",")))
	}
	if tok := strings.TrimSpace(n.Token); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}

	client := n.Client
	if client == nil {
		client = defaultNtfyClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error names the method and URL: the topic, which is left out, never the message.
		return &topicHidden{msg: "ntfy publish: " + strings.ReplaceAll(err.Error(), url.PathEscape(p.Topic), topicRef), err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused

	status := resp.StatusCode
	if status >= 200 && status <= 299 {
		return nil
	}
	detail := ntfyErrorDetail(body, p.Message)
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status >= 500, status < 400:
		return fmt.Errorf("ntfy publish: HTTP %d%s: %w", status, detail, errNtfyTemporary)
	default:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("ntfy rejected the publish: HTTP %d%s", status, detail), ErrTypeNtfyRejected, nil)
	}
}

// topicRef stands for the ntfy topic in errors: whoever knows a topic can read what is pushed to
// it, so it stays out of logs, last_error and alerts.
const topicRef = "<topic>"

// topicHidden is an error whose text has the topic replaced by topicRef; it still unwraps to
// the original (a context deadline, a network error).
type topicHidden struct {
	msg string
	err error
}

func (e *topicHidden) Error() string { return e.msg }
func (e *topicHidden) Unwrap() error { return e.err }

// ntfyErrorDetail summarises ntfy's JSON error body as ", ntfy code 40101 (unauthorized)". The
// error text is left out if it may quote the message, and the body is ignored if it is not
// ntfy's JSON (a proxy's HTML page, say).
func ntfyErrorDetail(body []byte, message string) string {
	var e struct {
		Code  int    `json:"code"`
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Code == 0 {
		return ""
	}
	text := e.Error
	if len(text) > 200 {
		text = text[:200]
	}
	text = strings.TrimSpace(sanitizeHeaderText(text))
	if text == "" || quotes(text, message) {
		return fmt.Sprintf(", ntfy code %d", e.Code)
	}
	return fmt.Sprintf(", ntfy code %d (%s)", e.Code, text)
}

// quotes reports whether text may quote message: whether it holds any 8 consecutive characters
// of it (all of a shorter message), compared after the same sanitising as text.
func quotes(text, message string) bool {
	const window = 8
	m := []rune(strings.TrimSpace(sanitizeHeaderText(message)))
	if len(m) == 0 {
		return false
	}
	if len(m) <= window {
		return strings.Contains(text, string(m))
	}
	for i := 0; i+window <= len(m); i++ {
		if strings.Contains(text, string(m[i:i+window])) {
			return true
		}
	}
	return false
}

// ntfyHeaderValue makes s safe as a header value: control characters (CR and LF above all)
// become spaces, and a value with non-ASCII characters is RFC 2047 encoded, which ntfy decodes.
func ntfyHeaderValue(s string) string {
	s = strings.TrimSpace(sanitizeHeaderText(s))
	for _, r := range s {
		if r > unicode.MaxASCII {
			return mime.BEncoding.Encode("UTF-8", s)
		}
	}
	return s
}

// sanitizeHeaderText replaces control characters (including CR, LF and tab) and invalid UTF-8
// with spaces.
func sanitizeHeaderText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, " "))
}
