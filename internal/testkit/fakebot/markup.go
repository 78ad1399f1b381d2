package fakebot

import (
	"fmt"
	"strconv"
	"strings"
)

// htmlTags are the tags Telegram's HTML parse mode knows (core.telegram.org/bots/api#html-style).
var htmlTags = map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
	"strike": true, "del": true, "span": true, "tg-spoiler": true, "a": true, "tg-emoji": true, "code": true, "pre": true,
	"blockquote": true}

// htmlEntities are the named entities Telegram decodes; numeric ones are decoded too.
var htmlEntities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// parseHTML is text in Telegram's HTML parse mode as the person reads it (tags out, entities
// decoded), or Telegram's complaint: a tag it does not know, a tag left open or closed out of
// order, a '<' that starts no tag. A '&' that starts no entity is refused too, which is stricter
// than Telegram (it keeps one that is followed by a space): escaped text never has one.
func parseHTML(text string) (string, error) {
	var out strings.Builder
	var open []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("can't parse entities: Unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+end]
			closing := strings.HasPrefix(tag, "/")
			name, _, _ := strings.Cut(strings.TrimPrefix(tag, "/"), " ")
			name = strings.ToLower(name)
			switch {
			case !htmlTags[name]:
				return "", fmt.Errorf("can't parse entities: Unsupported start tag %q at byte offset %d", name, i)
			case closing && (len(open) == 0 || open[len(open)-1] != name):
				return "", fmt.Errorf("can't parse entities: Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, last(open), name)
			case closing:
				open = open[:len(open)-1]
			case (name == "code" || name == "pre") && len(open) > 0 && open[len(open)-1] == "code":
				return "", fmt.Errorf("can't parse entities: Entities can't be nested in code at byte offset %d", i)
			default:
				open = append(open, name)
			}
			i += end + 1
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 || end > 10 {
				return "", fmt.Errorf("can't parse entities: Unescaped '&' at byte offset %d", i)
			}
			name := text[i+1 : i+end]
			decoded, ok := htmlEntities[name]
			if num, isNum := strings.CutPrefix(name, "#"); !ok && isNum {
				base := 10
				if hex, isHex := strings.CutPrefix(strings.ToLower(num), "x"); isHex {
					num, base = hex, 16
				}
				if n, err := strconv.ParseInt(num, base, 32); err == nil && n > 0 {
					decoded, ok = string(rune(n)), true
				}
			}
			if !ok {
				return "", fmt.Errorf("can't parse entities: Unsupported HTML entity %q at byte offset %d", name, i)
			}
			out.WriteString(decoded)
			i += end + 1
		default:
			out.WriteByte(text[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", fmt.Errorf("can't parse entities: Can't find end tag corresponding to start tag %q", last(open))
	}
	return out.String(), nil
}

func last(open []string) string {
	if len(open) == 0 {
		return ""
	}
	return open[len(open)-1]
}
