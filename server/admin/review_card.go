package admin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// canSeeRequest: who reads an operation's request as the agent sent it.
// Whoever acts on operations — decides money, settles unclear ones, runs
// the gateway — needs the customer and the description to find the
// operation at its target; the auditor reads them masked.
func canSeeRequest(c echo.Context) bool {
	return can(c, store.RoleAdmin, store.RoleOperator, store.RoleAccountant)
}

// secretField reports whether a payload field holds a secret or card
// data, which no page shows whole to anyone: a password, a token, a
// card's number or its security code.
func secretField(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "secret", "token", "card_number", "cardnumber", "pan", "cvv", "cvc", "csc"} {
		if n == s || strings.Contains(n, s) && s != "pan" {
			return true
		}
	}
	return false
}

// searchHint is the exact search to run at the target to find what the
// operation key made there, in the page's language: the register record
// of 1C's HTTP service, the document's Ref_Key for 1C over OData (the
// name-based UUID the gateway chose), the CRM's ORIGIN_ID, the payment's
// metadata at YooKassa. "" for a kind without one.
func (h *Handler) searchHint(l *views.Labels, op store.Operation) string {
	kind := h.targetKind(op.TargetSystem)
	f := l.SearchByKind[kind]
	if f == "" {
		return ""
	}
	if kind == "onec_odata" {
		return fmt.Sprintf(f, onecodata.RefKey(op.TargetSystem, op.Intent, op.Key))
	}
	return fmt.Sprintf(f, op.Key)
}

// httpStatus finds an HTTP status in a target's error text.
// A status is written "HTTP 503", "status 503", or as Go's http package
// writes resp.Status, "503 Service Unavailable".
var httpStatus = regexp.MustCompile(`\bHTTP[ /]?(?:1\.[01] )?([1-5][0-9]{2})\b|\bstatus (?:code )?([1-5][0-9]{2})\b|\b([1-5][0-9]{2}) [A-Z][a-z]`)

// targetErrorText says in the page's language what a target's error
// text means, for people: unavailable (5xx), refusing (4xx), asking to
// wait (429), silent (a timeout), unreachable (no connection). The raw
// text stays one click away; "" when raw is.
func targetErrorText(l *views.Labels, target, raw string) string {
	if raw == "" {
		return ""
	}
	low := strings.ToLower(raw)
	if m := httpStatus.FindStringSubmatch(raw); m != nil {
		code, _ := strconv.Atoi(m[1] + m[2] + m[3])
		switch {
		case code == 429:
			return fmt.Sprintf(l.TargetHTTP429, target, code)
		case code >= 500:
			return fmt.Sprintf(l.TargetHTTP5xx, target, code)
		case code >= 400:
			return fmt.Sprintf(l.TargetHTTP4xx, target, code)
		}
	}
	switch {
	case strings.Contains(low, "deadline exceeded") || strings.Contains(low, "timeout") || strings.Contains(low, "timed out"):
		return fmt.Sprintf(l.TargetTimeout, target)
	case strings.Contains(low, "connection refused") || strings.Contains(low, "no such host") || strings.Contains(low, "connection reset") || strings.Contains(low, "eof"):
		return fmt.Sprintf(l.TargetRefused, target)
	}
	return fmt.Sprintf(l.TargetOther, target)
}

// maskSecrets masks the secrets and card data in v, at any depth.
func maskSecrets(name string, v any) any { return maskUnder(name, v, secretField) }
