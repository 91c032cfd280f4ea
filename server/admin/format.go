package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/views"
)

// nbsp keeps an amount, a date or a duration on one line.
const nbsp = "\u00a0"

// currencySymbols are the currencies shown by symbol; others by code.
var currencySymbols = map[string]string{"RUB": "₽", "USD": "$", "EUR": "€"}

// formatMoney formats an amount in minor units for people: in Russian
// «1 250,00 ₽», in English «₽1,250.00»; a currency without a symbol
// follows its amount as its code («1 250,00 CHF»).
func formatMoney(minor int64, currency, lang string) string {
	currency = strings.ToUpper(strings.TrimSpace(currency))
	digits, ok := adapters.MinorDigits(currency)
	if !ok {
		digits = 2
	}
	neg := minor < 0
	u := uint64(minor)
	if neg {
		u = uint64(-minor)
	}
	s := strconv.FormatUint(u, 10)
	for len(s) <= digits {
		s = "0" + s
	}
	whole, frac := s[:len(s)-digits], s[len(s)-digits:]

	group, point := nbsp, ","
	if lang == "en" {
		group, point = ",", "."
	}
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(group)
		}
		b.WriteRune(r)
	}
	num := b.String()
	if digits > 0 {
		num += point + frac
	}
	if neg {
		num = "−" + num
	}
	sym, ok := currencySymbols[currency]
	switch {
	case !ok:
		return num + nbsp + currency
	case lang == "en":
		return sym + num
	default:
		return num + nbsp + sym
	}
}

// formatTime is a moment for people in loc: «02.12.2026 14:05» in
// Russian, «2026-12-02 14:05» in English; "—" for none.
func formatTime(t time.Time, loc *time.Location, lang string) string {
	if t.IsZero() {
		return "—"
	}
	if lang == "en" {
		return t.In(loc).Format("2006-01-02" + nbsp + "15:04")
	}
	return t.In(loc).Format("02.01.2006" + nbsp + "15:04")
}

// zoneName names t's zone for people: its abbreviation and its offset
// from UTC ("MSK, UTC+03:00"), or the offset alone when the abbreviation
// is only a number.
func zoneName(t time.Time) string {
	name, _ := t.Zone()
	offset := "UTC" + t.Format("-07:00")
	if name == "" || name == "UTC" || strings.ContainsAny(name, "+-0123456789") {
		return offset
	}
	return name + ", " + offset
}

// formatSeconds is a moment with seconds, for traces and the audit trail.
func formatSeconds(t time.Time, loc *time.Location, lang string) string {
	if t.IsZero() {
		return "—"
	}
	if lang == "en" {
		return t.In(loc).Format("2006-01-02" + nbsp + "15:04:05")
	}
	return t.In(loc).Format("02.01.2006" + nbsp + "15:04:05")
}

// formatDuration is a span for people, to the minute, in its two largest
// units: «3 дн 4 ч», «2 ч 5 мин», «меньше минуты».
func formatDuration(d time.Duration, l *views.Labels) string {
	if d < time.Minute {
		return l.UnderMinute
	}
	m := int(d / time.Minute)
	days, hours, mins := m/(24*60), m/60%24, m%60
	unit := func(n int, u string) string { return strconv.Itoa(n) + nbsp + u }
	switch {
	case days > 0 && hours > 0:
		return unit(days, l.Day) + " " + unit(hours, l.Hour)
	case days > 0:
		return unit(days, l.Day)
	case hours > 0 && mins > 0:
		return unit(hours, l.Hour) + " " + unit(mins, l.Minute)
	case hours > 0:
		return unit(hours, l.Hour)
	default:
		return unit(mins, l.Minute)
	}
}

// sensitiveFields are payload fields shown only in part: they may hold
// personal data or free text a person typed (a receipt's customer e-mail
// and phone among them).
var sensitiveFields = map[string]bool{
	"account_id": true, "customer_id": true, "description": true, "reason": true, "comment": true,
	"email": true, "phone": true,
}

// mask shows a sensitive value in part: its first and last four
// characters («merc…t-17»), fewer for short values, nothing of very short
// ones.
func mask(s string) string {
	n := utf8.RuneCountInString(s)
	r := []rune(s)
	switch {
	case n == 0:
		return ""
	case n <= 4:
		return "…"
	case n < 10:
		return string(r[:2]) + "…" + string(r[n-2:])
	default:
		return string(r[:4]) + "…" + string(r[n-4:])
	}
}

// payload is an operation's normalized payload, read for display.
type payload map[string]any

// parsePayload reads a payload; numbers stay exact.
func parsePayload(raw []byte) payload {
	p := payload{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return payload{}
	}
	return p
}

// str is a string field, or "".
func (p payload) str(k string) string {
	s, _ := p[k].(string)
	return s
}

// minor is the amount_minor field.
func (p payload) minor() (int64, bool) {
	n, ok := p["amount_minor"].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil
}

// amount is the payload's amount for people, or "".
func (p payload) amount(lang string) string {
	m, ok := p.minor()
	if !ok {
		return ""
	}
	return formatMoney(m, p.str("currency"), lang)
}

// maskValue masks v when it sits under a sensitive name, at any depth.
func maskValue(name string, v any) any {
	return maskUnder(name, v, func(name string) bool { return sensitiveFields[name] })
}

// maskUnder masks every string of v that sits under a name masked says
// is to be masked, at any depth.
func maskUnder(name string, v any, masked func(string) bool) any {
	switch v := v.(type) {
	case string:
		if masked(name) {
			return mask(v)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = maskUnder(k, x, masked)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = maskUnder(name, x, masked)
		}
		return out
	default:
		return v
	}
}

// plainJSON is raw JSON on one line, with <, > and & as themselves
// rather than \u003c escapes (the page escapes them), or raw as it is
// when it is not JSON.
func plainJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return marshalPlain(v)
}

// marshalPlain is v as one line of JSON without HTML escapes.
func marshalPlain(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// actorText names who caused an audit event.
func actorText(kind, name string) string { return fmt.Sprintf("%s: %s", kind, name) }

// Money is an amount as the pages show it (formatMoney), for what speaks
// of an operation away from them: the notices people are sent.
func Money(minor int64, currency, lang string) string { return formatMoney(minor, currency, lang) }

// OperationHref is the path of an operation's card, for the notices'
// links.
func OperationHref(key string) string { return operationHref(key) }
