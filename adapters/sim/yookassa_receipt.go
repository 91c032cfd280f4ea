package sim

import (
	"math"
	"net/mail"
	"strconv"
	"unicode/utf8"
)

// ykReceipt is the receipt of a payment or refund (54-FZ), as far as the
// simulator checks it: a customer to send it to, and items adding up to
// the amount.
type ykReceipt struct {
	Customer *struct {
		Email string `json:"email"`
		Phone string `json:"phone"`
	} `json:"customer"`
	Items []struct {
		Description    string    `json:"description"`
		Quantity       any       `json:"quantity"`
		Amount         *ykAmount `json:"amount"`
		VatCode        int       `json:"vat_code"`
		PaymentSubject string    `json:"payment_subject"`
		PaymentMode    string    `json:"payment_mode"`
	} `json:"items"`
	TaxSystemCode int `json:"tax_system_code"`
}

// checkReceipt refuses a request without the receipt a receipt-issuing
// shop needs, or with one YooKassa would refuse; y.mu is held.
func (y *ykSim) checkReceipt(r *ykReceipt, minor int64) *ykFailure {
	if r == nil {
		if y.mode.RequireReceipts {
			return ykInvalid("receipt", "Receipt is missing or illegal")
		}
		return nil
	}
	if r.Customer == nil || (r.Customer.Email == "" && r.Customer.Phone == "") {
		return ykInvalid("receipt.customer", "Specify the customer's email or phone")
	}
	if e := r.Customer.Email; e != "" {
		if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
			return ykInvalid("receipt.customer.email", "Email is invalid")
		}
	}
	if ph := r.Customer.Phone; ph != "" {
		if len(ph) < 7 || len(ph) > 15 || !ykDigits(ph) {
			return ykInvalid("receipt.customer.phone", "Phone must be digits in ITU-T E.164 without +")
		}
	}
	if len(r.Items) == 0 || len(r.Items) > 100 {
		return ykInvalid("receipt.items", "Receipt must hold from 1 to 100 items")
	}
	var total float64
	for _, it := range r.Items {
		n := utf8.RuneCountInString(it.Description)
		if n == 0 || n > 128 {
			return ykInvalid("receipt.items.description", "Item description must be 1 to 128 characters")
		}
		if it.VatCode < 1 || it.VatCode > 12 {
			return ykInvalid("receipt.items.vat_code", "vat_code is invalid")
		}
		if it.PaymentSubject != "" && !ykPaymentSubjects[it.PaymentSubject] {
			// The text YooKassa answered a shop's unknown payment_subject
			// (github.com/danuk/shm issue 17).
			return ykInvalid("receipt.items.payment_subject", "Invalid parameter's value (for example, the value is illegal or its format is incorrect). Send the value in accordance with the documentation.")
		}
		q, ok := ykQuantity(it.Quantity)
		if !ok {
			return ykInvalid("receipt.items.quantity", "quantity is invalid")
		}
		if it.Amount == nil {
			return ykInvalid("receipt.items.amount", "Specify amount")
		}
		price, ok := ykParseValue(it.Amount.Value)
		if !ok {
			return ykInvalid("receipt.items.amount", "Amount value is invalid")
		}
		total += q * float64(price)
	}
	if int64(math.Round(total)) != minor {
		return ykInvalid("receipt", "The sum of the receipt items differs from the amount")
	}
	return nil
}

// ykPaymentSubjects are the payment_subject values YooKassa lists
// (https://yookassa.ru/en/developers/payment-acceptance/scenario-extensions/54fz/parameters-values):
// FFD 1.05's, then FFD 1.2's.
var ykPaymentSubjects = map[string]bool{
	"commodity": true, "excise": true, "job": true, "service": true, "payment": true, "casino": true,
	"gambling_bet": true, "gambling_prize": true, "lottery": true, "lottery_prize": true,
	"intellectual_activity": true, "agent_commission": true, "property_right": true, "non_operating_gain": true,
	"insurance_premium": true, "sales_tax": true, "resort_fee": true, "composite": true, "another": true,
	"marked": true, "non_marked": true, "marked_excise": true, "non_marked_excise": true, "fine": true, "tax": true,
	"lien": true, "cost": true, "agent_withdrawals": true, "pension_insurance_without_payouts": true,
	"pension_insurance_with_payouts": true, "health_insurance_without_payouts": true,
	"health_insurance_with_payouts": true, "health_insurance": true,
}

// ykQuantity reads an item's quantity: a positive number, or a string of
// one, with at most three digits after the point.
func ykQuantity(v any) (float64, bool) {
	var q float64
	switch v := v.(type) {
	case float64:
		q = v
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		q = f
	default:
		return 0, false
	}
	return q, q > 0 && math.Abs(q*1000-math.Round(q*1000)) < 1e-6
}

func ykDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
