package yookassa

import (
	"encoding/json"
	"math/big"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Receipts is how a shop that issues 54-FZ receipts through YooKassa
// («Чеки от ЮKassa» or an online cash register) sends them: with every
// payment and refund, in its receipt object
// (https://yookassa.ru/developers/payment-acceptance/receipts/54fz/yoomoney/basics).
// Such a shop refuses a payment or refund without one (400).
type Receipts struct {
	// Required: every charge and refund must carry a receipt; one without
	// is refused before anything is sent (and before anyone approves it).
	Required bool
	// TaxSystemCode is the shop's tax system (1–6); 0 sends none, for a
	// shop with one tax system, whose register knows it.
	TaxSystemCode int
	// VatCode is the VAT code (1–12) of a line that names none.
	VatCode int
	// PaymentSubject and PaymentMode are a line's признак предмета и
	// способа расчёта when it names none, e.g. commodity and full_payment.
	PaymentSubject string
	PaymentMode    string
}

// receiptPayload is the receipt of a charge or refund payload (the
// contract's receipt object).
type receiptPayload struct {
	Email string        `json:"email"`
	Phone string        `json:"phone"`
	Items []receiptLine `json:"items"`
}

type receiptLine struct {
	Description    string      `json:"description"`
	Quantity       json.Number `json:"quantity"`
	PriceMinor     int64       `json:"price_minor"`
	VatCode        int         `json:"vat_code"`
	PaymentSubject string      `json:"payment_subject"`
	PaymentMode    string      `json:"payment_mode"`
}

// receiptRequest is YooKassa's receipt object of a payment or refund.
type receiptRequest struct {
	Customer      receiptCustomer `json:"customer"`
	Items         []receiptItem   `json:"items"`
	TaxSystemCode int             `json:"tax_system_code,omitempty"`
}

type receiptCustomer struct {
	Email string `json:"email,omitempty"`
	Phone string `json:"phone,omitempty"`
}

type receiptItem struct {
	Description    string      `json:"description"`
	Quantity       json.Number `json:"quantity"`
	Amount         amount      `json:"amount"`
	VatCode        int         `json:"vat_code"`
	PaymentSubject string      `json:"payment_subject,omitempty"`
	PaymentMode    string      `json:"payment_mode,omitempty"`
}

// buildReceipt turns a payload's receipt into YooKassa's, with the
// configured defaults, for an operation of total minor units in currency.
// It refuses a missing receipt where receipts are required, a receipt
// without the customer's e-mail or phone, and lines that do not add up to
// the amount (YooKassa refuses those too). The customer's contacts are
// never put in an error.
func buildReceipt(r *receiptPayload, cfg Receipts, total int64, currency string) (*receiptRequest, error) {
	if r == nil {
		if cfg.Required {
			return nil, final(codes.Validation, "receipt", "this shop issues fiscal receipts (54-FZ): send receipt with the customer's email or phone and the lines of the purchase", nil)
		}
		return nil, nil
	}
	if r.Email == "" && r.Phone == "" {
		return nil, final(codes.Validation, "receipt", "the receipt needs the customer's email or phone to send it to", nil)
	}
	if len(r.Items) == 0 {
		return nil, final(codes.Validation, "receipt.items", "the receipt needs at least one line", nil)
	}
	exp, _ := exponent(currency)
	out := &receiptRequest{Customer: receiptCustomer{Email: r.Email, Phone: r.Phone}, TaxSystemCode: cfg.TaxSystemCode}
	sum := new(big.Rat)
	for _, l := range r.Items {
		q, ok := new(big.Rat).SetString(l.Quantity.String())
		if !ok || q.Sign() <= 0 {
			return nil, final(codes.Validation, "receipt.items", "a receipt line's quantity must be a number greater than 0", nil)
		}
		price, err := formatAmount(l.PriceMinor, exp)
		if err != nil {
			return nil, final(codes.Validation, "receipt.items", "a receipt line's price_minor is out of range", nil)
		}
		sum.Add(sum, new(big.Rat).Mul(q, new(big.Rat).SetInt64(l.PriceMinor)))
		it := receiptItem{
			Description: l.Description, Quantity: l.Quantity,
			Amount:  amount{Value: price, Currency: currency},
			VatCode: l.VatCode, PaymentSubject: l.PaymentSubject, PaymentMode: l.PaymentMode,
		}
		if it.VatCode == 0 {
			it.VatCode = cfg.VatCode
		}
		if it.VatCode == 0 {
			return nil, final(codes.Validation, "receipt.items", "a receipt line needs vat_code (no default VAT code is configured)", nil)
		}
		if it.PaymentSubject == "" {
			it.PaymentSubject = cfg.PaymentSubject
		}
		if it.PaymentMode == "" {
			it.PaymentMode = cfg.PaymentMode
		}
		out.Items = append(out.Items, it)
	}
	if sum.Cmp(new(big.Rat).SetInt64(total)) != 0 {
		return nil, final(codes.Validation, "receipt.items", "the receipt lines (quantity times price_minor) do not add up to amount_minor", nil)
	}
	return out, nil
}
