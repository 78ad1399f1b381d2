package workflows

// An approval's card (issues 36 and 61): what is not shown is approved all the same, so the card
// shows every field of the tool call, each made visible (redact.Reveal: hidden characters
// written out, long blank runs counted, a long value's head and tail with how much is left out
// between them) and escaped for Telegram's HTML, and it lists exactly what "Allow for this
// session" gives and what the CLI offered beside it that is not given. A card that cannot show
// all of it in one message takes no answer from the phone.

import (
	"fmt"
	"html"
	"strings"

	"github.com/intentq/intentq/internal/redact"
)

// ApprovalField is one field of the tool call an approval is for, as the agent gave it.
type ApprovalField struct {
	Name string `json:"name"`
	// Value is a string field as it is, any other as JSON.
	Value string `json:"value"`
	// LeftOut characters were taken out of Value at rune offset At: a value too long to carry
	// whole keeps its head and its tail, and the card says how much is missing between them.
	At      int `json:"at,omitempty"`
	LeftOut int `json:"left_out,omitempty"`
}

// Bounds of the card. Telegram takes 4,096 characters after its HTML is parsed; the card's HTML
// is kept under cardBudget UTF-16 units before it is parsed, so it fits with the paragraph that
// says how to answer, or how it ended, in any case.
const (
	cardBudget     = 3600
	cardMainField  = 1500 // the first field (the command, the path), at most, as shown
	cardOtherField = 600  // any other field
	cardMinField   = 40
	cardSaid       = 300 // the agent's own description
	cardGrant      = 300 // one line of what "Allow for this session" gives
)

// card is the card's HTML up to the paragraph that says how to answer, and whether the phone may
// answer it: not when it cannot show every field (too many, or more than the hook carried).
func (in ApprovalInput) card() (string, bool) {
	// A card that does not fit with every field at its least is decided by one rendering (the
	// loop below would render it seven times, in workflow code: 80 long fields took over a
	// second under the race detector).
	if in.MoreFields > 0 || utf16Len(in.cardBody(cardMinField, cardMinField)) > cardBudget {
		return fmt.Sprintf("%s\n\nThis call has %d fields, more than a card can show: answer at the terminal.",
			in.cardHead(), len(in.Fields)+in.MoreFields), false
	}
	main, other := cardMainField, cardOtherField
	for {
		body := in.cardBody(main, other)
		if in.MoreFields == 0 && utf16Len(body) <= cardBudget {
			return body, true
		}
		if in.MoreFields > 0 || main == cardMinField && other == cardMinField {
			break
		}
		main, other = max(main*3/4, cardMinField), max(other*3/4, cardMinField)
	}
	return fmt.Sprintf("%s\n\nThis call has %d fields, more than a card can show: answer at the terminal.",
		in.cardHead(), len(in.Fields)+in.MoreFields), false
}

// cardHead is the card's first line: who asks for what.
func (in ApprovalInput) cardHead() string {
	return fmt.Sprintf("🔐 %s asks to use %s:", esc(in.Session, 100), esc(in.Tool, 200))
}

// cardBody is the card with the first field shown up to main characters, the others (and each
// line of what Allow for this session gives or not) up to other each.
func (in ApprovalInput) cardBody(main, other int) string {
	var b strings.Builder
	b.WriteString(in.cardHead() + "\n")
	if len(in.Fields) == 0 { // asked before issue 61: the action as the hook described it
		shown, _ := redact.RevealCut(in.Action, 0, 0, main)
		b.WriteString("\n<pre>" + html.EscapeString(shown) + "</pre>")
	}
	for i, f := range in.Fields {
		if i == 0 {
			b.WriteString("\n" + fieldHTML(f, main, true))
		} else {
			b.WriteString("\n" + fieldHTML(f, other, false))
		}
	}
	if in.Said != "" {
		said := strings.NewReplacer("\n", " ", "\t", " ").Replace(in.Said)
		fmt.Fprintf(&b, "\n\n(the agent says: %s)", esc(said, cardSaid))
	}
	line := min(cardGrant, other)
	if len(in.Grants) > 0 && in.offers(ChoiceAllowSession) {
		b.WriteString("\n\n<b>Allow for this session</b> gives, until the session ends, without asking again:")
		for _, g := range in.Grants {
			b.WriteString("\n• <code>" + esc(g, line) + "</code>")
		}
	}
	if len(in.Withheld) > 0 {
		fmt.Fprintf(&b, "\n\n%s also offered, and the phone never gives:", esc(in.CLI, 40))
		for _, w := range in.Withheld {
			b.WriteString("\n• " + esc(w, line))
		}
	}
	return b.String()
}

// fieldHTML shows one field: a short one-line value beside its name, any other (and the main
// field: block) below it, with its length when it is not shown whole. A field that turns a
// safeguard off is marked.
func fieldHTML(f ApprovalField, limit int, block bool) string {
	name := "<b>" + esc(f.Name, 100) + "</b>"
	if strings.HasPrefix(strings.ToLower(f.Name), "dangerously") && f.Value != "false" {
		name = "⚠️ " + name
	}
	shown, cut := redact.RevealCut(f.Value, f.At, f.LeftOut, limit)
	switch {
	case f.Value == "" && f.LeftOut == 0:
		return name + ": <i>empty</i>"
	case !block && !cut && !strings.Contains(shown, "\n") && redact.Chars(shown) <= 60:
		return name + ": <code>" + html.EscapeString(shown) + "</code>"
	case cut:
		name += fmt.Sprintf(" (%s characters; the middle is not shown)", redact.Count(redact.Chars(f.Value)+f.LeftOut))
	}
	return name + ":\n<pre>" + html.EscapeString(shown) + "</pre>"
}

// esc is s made visible, cut to limit characters (head and tail), and escaped for HTML.
func esc(s string, limit int) string { return html.EscapeString(redact.Reveal(s, limit)) }

// utf16Len is the length of s as Telegram counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// offers reports whether the card has a button of choice.
func (in ApprovalInput) offers(choice string) bool {
	for _, b := range in.Buttons {
		if b.Choice == choice {
			return true
		}
	}
	return false
}

// howToAnswer is the card's last paragraph while it waits.
func (in ApprovalInput) howToAnswer(answerable bool) string {
	switch {
	case len(in.Buttons) == 0:
		return "Answer at the terminal: " + esc(in.CLI, 40) + " asks there, and intentq cannot answer it."
	case !answerable:
		return "Answer at the terminal: this card cannot show all of it."
	}
	return "Answer with a button, or reply /allow or /deny to this card. The terminal can answer too; this card then says so."
}

// CardText is the card's text (HTML) while it waits.
func (in ApprovalInput) CardText() string {
	body, answerable := in.card()
	return body + "\n\n" + in.howToAnswer(answerable)
}

// endedCardText is the card's text once the approval ended: how it ended in place of how to
// answer.
func (in ApprovalInput) endedCardText(r ApprovalResult) string {
	body, _ := in.card()
	return body + "\n\n" + cardMark(r) + " " + esc(r.Words(), 500) + " (" + r.At.UTC().Format("15:04:05") + " UTC)."
}
