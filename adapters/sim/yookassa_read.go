package sim

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The YooKassa simulator's GETs: a payment, a payment method or a refund
// by id, and the lists of payments and refunds with their filters and
// cursors.

// read is the common path of a GET: fault, auth, the read, the answer.
func (y *ykSim) read(w http.ResponseWriter, r *http.Request, get func() (any, *ykFailure)) {
	f := y.s.TakeFault(YooKassa, OnLookup)
	if f.Before(w) || y.throttled(w) {
		return
	}
	var (
		status = http.StatusOK
		v      any
	)
	if _, ok := y.authorized(r); !ok {
		e := ykUnauthorized()
		status, v = e.status, e.body
	} else {
		y.mu.Lock()
		got, fail := get()
		y.mu.Unlock()
		if fail != nil {
			status, v = fail.status, fail.body
		} else {
			v = got
		}
	}
	if f.After(w) {
		return
	}
	WriteJSON(w, status, v)
}

// handleGetPayment serves GET /yookassa/v3/payments/{id}. An id the shop
// does not have is answered as the live API was recorded answering one of
// its own form (a UUID): 404 not_found, parameter payment_id, "Incorrect
// payment_id. Payment doesn't exist or access denied…". An id of no
// payment's form is a request that breaks the API's rules: 400
// invalid_request, parameter payment_id (that status for it is the
// documented meaning of 400, not a recording).
func (y *ykSim) handleGetPayment(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		id := r.PathValue("id")
		p, ok := y.payments[id]
		switch {
		case !ok && !ykIDForm.MatchString(id):
			return nil, ykInvalid("payment_id", "Incorrect payment_id.")
		case !ok:
			return nil, ykFail(http.StatusNotFound, "not_found", "payment_id", "Incorrect payment_id. Payment doesn't exist or access denied. Specify the payment ID created in your store.")
		}
		return y.paymentView(p), nil
	})
}

// ykIDForm is the form of YooKassa's object ids: a UUID.
var ykIDForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// handleGetPaymentMethod serves GET /yookassa/v3/payment_methods/{id}: a
// seeded account is a saved bank card, active or (blocked, deleted)
// inactive.
func (y *ykSim) handleGetPaymentMethod(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		id := r.PathValue("id")
		state, ok := Accounts[id]
		if !ok {
			return nil, ykFail(http.StatusNotFound, "not_found", "payment_method_id", "Payment method not found")
		}
		status := "active"
		if state != Active {
			status = "inactive"
		}
		return map[string]any{
			"type": "bank_card", "id": id, "saved": true, "status": status, "title": "Bank card *4477",
			"card": map[string]any{"first6": "555555", "last4": "4477", "expiry_year": "2030", "expiry_month": "07", "card_type": "MasterCard"},
		}, nil
	})
}

// handleGetRefund serves GET /yookassa/v3/refunds/{id}.
func (y *ykSim) handleGetRefund(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		ref, ok := y.refunds[r.PathValue("id")]
		if !ok {
			return nil, ykFail(http.StatusNotFound, "not_found", "refund_id", "Refund not found")
		}
		return y.refundView(ref), nil
	})
}

// handleListPayments serves GET /yookassa/v3/payments.
func (y *ykSim) handleListPayments(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		q, fail := ykParseListQuery(r)
		if fail != nil {
			return nil, fail
		}
		var page ykList
		page.Type = "list"
		page.Items = []any{}
		last := int64(0)
		for i := len(y.pOrder) - 1; i >= 0; i-- {
			p := y.pOrder[i]
			y.settlePayment(p)
			if !q.admits(p.seq, p.created, p.status, "") {
				continue
			}
			if len(page.Items) == q.limit {
				page.NextCursor = ykCursor(last)
				break
			}
			page.Items = append(page.Items, y.paymentView(p))
			last = p.seq
		}
		return page, nil
	})
}

// handleListRefunds serves GET /yookassa/v3/refunds.
func (y *ykSim) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	y.read(w, r, func() (any, *ykFailure) {
		q, fail := ykParseListQuery(r)
		if fail != nil {
			return nil, fail
		}
		var page ykList
		page.Type = "list"
		page.Items = []any{}
		last := int64(0)
		for i := len(y.rOrder) - 1; i >= 0; i-- {
			ref := y.rOrder[i]
			y.settleRefund(ref)
			if !q.admits(ref.seq, ref.created, ref.status, ref.paymentID) {
				continue
			}
			if len(page.Items) == q.limit {
				page.NextCursor = ykCursor(last)
				break
			}
			page.Items = append(page.Items, y.refundView(ref))
			last = ref.seq
		}
		return page, nil
	})
}

// ykListQuery is a list request's filters and paging.
type ykListQuery struct {
	limit     int
	before    int64 // cursor: only objects made before this sequence number
	gte, gt   time.Time
	lte, lt   time.Time
	status    string
	paymentID string
}

func ykParseListQuery(r *http.Request) (ykListQuery, *ykFailure) {
	v := r.URL.Query()
	q := ykListQuery{limit: 10, status: v.Get("status"), paymentID: v.Get("payment_id")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return q, ykInvalid("limit", "limit must be from 1 to 100")
		}
		q.limit = n
	}
	if s := v.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, err2 := strconv.ParseInt(strings.TrimPrefix(string(b), "yk:"), 10, 64)
		if err != nil || err2 != nil || !strings.HasPrefix(string(b), "yk:") || n <= 0 {
			return q, ykInvalid("cursor", "cursor is invalid")
		}
		q.before = n
	}
	for name, dst := range map[string]*time.Time{"created_at.gte": &q.gte, "created_at.gt": &q.gt, "created_at.lte": &q.lte, "created_at.lt": &q.lt} {
		if s := v.Get(name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, ykInvalid(name, "Date and time must be in ISO 8601 format")
			}
			*dst = t
		}
	}
	return q, nil
}

// admits reports whether an object passes the filters and the cursor.
func (q ykListQuery) admits(seq int64, created time.Time, status, paymentID string) bool {
	switch {
	case q.before > 0 && seq >= q.before,
		!q.gte.IsZero() && created.Before(q.gte),
		!q.gt.IsZero() && !created.After(q.gt),
		!q.lte.IsZero() && created.After(q.lte),
		!q.lt.IsZero() && !created.Before(q.lt),
		q.status != "" && status != q.status,
		q.paymentID != "" && paymentID != q.paymentID:
		return false
	}
	return true
}

// ykCursor is the cursor of the page that follows the object with seq.
func ykCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("yk:" + strconv.FormatInt(seq, 10)))
}
