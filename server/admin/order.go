package admin

import (
	"context"
	"math/big"
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

// orderInvoice fills r with the invoice of the same order the journal
// holds, if any: the newest one that was not refused, and how many more
// there are, so the accountant sees what the payment is for.
func (h *Handler) orderInvoice(c echo.Context, r *views.ApprovalRow) {
	if r.OrderID == "" {
		return
	}
	ops, err := h.d.Store.OrderOperations(c.Request().Context(), h.invoiceIntents(), r.OrderID, 10)
	if err != nil {
		h.d.Log.Warn("order invoices", "err", err)
		return
	}
	var live []store.Operation
	for _, op := range ops {
		if op.Status != store.StatusFailedFinal {
			live = append(live, op)
		}
	}
	if len(live) == 0 {
		return
	}
	inv, l := live[0], labels(c)
	r.InvoiceKey, r.InvoiceHref = inv.Key, operationHref(inv.Key)
	r.InvoiceObject, r.InvoiceStatus = inv.TargetObjectID, l.StatusLabel(string(inv.Status))
	r.InvoiceAmount = invoiceTotal(parsePayload(inv.Payload), lang(c))
	r.InvoiceMore = len(live) - 1
}

// shopName is the name the configuration gives the shop the payments of
// target go to, "" when none.
func (h *Handler) shopName(_ context.Context, target string) string {
	return h.d.ShopNames[target]
}

// invoiceTotal is the sum of an invoice's lines (quantity × price_minor),
// or "" when its lines say no price.
func invoiceTotal(p payload, lg string) string {
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
	if !some {
		return ""
	}
	return formatMoney(roundRat(total), p.str("currency"), lg)
}
