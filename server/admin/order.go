package admin

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// invoicePrefix begins the names of the intents that make an invoice in
// 1C (the built-in invoice.create, a firm's invoice.* of its own).
const invoicePrefix = "invoice."

// invoiceIntents are the loaded intents that make an invoice.
func (h *Handler) invoiceIntents() []string {
	var out []string
	for _, def := range h.d.Catalog.Definitions() {
		if strings.HasPrefix(def.Name, invoicePrefix) && !slices.Contains(out, def.Name) {
			out = append(out, def.Name)
		}
	}
	return out
}

// orderInvoice fills r with the 1C invoice of the same order the journal
// holds: of those not refused and not held as a suspected duplicate (a
// held one was never made), the one made whose total is the payment's
// amount, else the newest made, else the newest still under way; and how
// many others there are. With none, r says the order has no invoice in
// 1C, which the accountant should see before money moves.
func (h *Handler) orderInvoice(c echo.Context, r *views.ApprovalRow, amount int64, currency string) {
	intents := h.invoiceIntents()
	if r.OrderID == "" || len(intents) == 0 {
		return
	}
	ops, err := h.d.Store.OrderOperations(c.Request().Context(), intents, r.OrderID, 10)
	if err != nil {
		h.d.Log.Warn("order invoices", "err", err)
		return
	}
	var live []store.Operation
	for _, op := range ops {
		held := op.Status == store.StatusAwaitingApproval && op.DuplicateOf != ""
		if op.Status != store.StatusFailedFinal && !held {
			live = append(live, op)
		}
	}
	l, lg := labels(c), lang(c)
	if len(live) == 0 {
		r.InvoiceNone = true
		return
	}
	rank := func(op store.Operation) int {
		switch {
		case op.Status != store.StatusSucceeded:
			return 2
		case amount > 0 && invoiceMinor(parsePayload(op.Payload), currency) == amount:
			return 0
		default:
			return 1
		}
	}
	// ops come newest first; a stable sort keeps that order within a rank.
	slices.SortStableFunc(live, func(a, b store.Operation) int { return rank(a) - rank(b) })
	inv := live[0]
	r.InvoiceKey, r.InvoiceHref = inv.Key, operationHref(inv.Key)
	r.InvoiceNumber = parsePayload(inv.Result).str("number")
	r.InvoiceStatus = l.StatusLabel(string(inv.Status))
	r.InvoiceMade = inv.Status == store.StatusSucceeded
	r.InvoiceAmount = invoiceTotal(parsePayload(inv.Payload), lg)
	r.InvoiceMismatch = r.InvoiceMade && amount > 0 && rank(inv) != 0
	if n := len(live) - 1; n > 0 {
		r.InvoiceMore = fmt.Sprintf(l.OrderInvoiceMoreFmt, plural(n, l.InvoiceForms))
		r.InvoiceMoreHref = "/admin/operations?q=" + url.QueryEscape(r.OrderID)
	}
}

// shopName is the name the configuration gives the shop the payments of
// target go to, "" when none.
func (h *Handler) shopName(_ context.Context, target string) string {
	return h.d.ShopNames[target]
}

// invoiceMinor is an invoice's total in minor units of currency, -1 when
// it is in another currency or its lines say no price.
func invoiceMinor(p payload, currency string) int64 {
	if !strings.EqualFold(p.str("currency"), currency) {
		return -1
	}
	total, ok := invoiceSum(p)
	if !ok {
		return -1
	}
	return roundRat(total)
}

// invoiceSum is the sum of an invoice's lines (quantity × price_minor);
// false when its lines say no price.
func invoiceSum(p payload) (*big.Rat, bool) {
	items, _ := p["items"].([]any)
	total, some := new(big.Rat), false
	for _, x := range items {
		m, _ := x.(map[string]any)
		q, okQ := rat(m["quantity"])
		pr, okP := rat(m["price_minor"])
		if okQ && okP {
			total.Add(total, new(big.Rat).Mul(q, pr))
			some = true
		}
	}
	return total, some
}

// invoiceTotal is the sum of an invoice's lines for people, or "" when
// its lines say no price.
func invoiceTotal(p payload, lg string) string {
	total, ok := invoiceSum(p)
	if !ok {
		return ""
	}
	return formatMoney(roundRat(total), p.str("currency"), lg)
}
