package sim

// YooKassa's HTTP notifications
// (https://yookassa.ru/developers/using-api/webhooks): when a payment
// comes to waiting_for_capture, succeeded or canceled, or a refund
// succeeds, the shop's notification URL gets a POST, Content-Type
// application/json, of
//
//	{"type": "notification", "event": "payment.succeeded", "object": {…}}
//
// whose object is the payment (or refund) as GET /payments/{id} (or
// /refunds/{id}) answers it at that moment. Only a 200 counts as
// delivered; anything else, or no answer, is attempted again on the
// schedule (YooKassa goes on for 24 hours at growing intervals). Every
// payment of the shop is notified, those of its other integrations too.
// A pending payment or refund settles, and is notified, when its time
// comes, whether or not anyone reads it.
//
// Tests set the URL, a short schedule and duplicate deliveries with
// (*Server).SetYooKassaNotify or POST /_sim/yookassa/notify, and read what
// was sent with YooKassaNotices or GET /_sim/yookassa/notifications. The
// setting outlives /_sim/reset, as a shop's does; `oncegate sim` and
// serve's built-in simulators take the URL from YOOKASSA_SIM_NOTIFY_URL.

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"time"
)

// YooKassaNotifyURLEnv names the variable New reads the notification URL
// from.
const YooKassaNotifyURLEnv = "YOOKASSA_SIM_NOTIFY_URL"

// The events YooKassa notifies of.
const (
	YooKassaWaitingForCapture = "payment.waiting_for_capture"
	YooKassaPaymentSucceeded  = "payment.succeeded"
	YooKassaPaymentCanceled   = "payment.canceled"
	YooKassaRefundSucceeded   = "refund.succeeded"
)

// DefaultYooKassaRetry is the default schedule of attempts after the
// first: growing intervals over about 24 hours, as YooKassa's.
var DefaultYooKassaRetry = []time.Duration{
	10 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// YooKassaNotify is where and how the simulated shop's notifications go.
// The zero value sends none.
type YooKassaNotify struct {
	// URL receives the notifications; empty sends none.
	URL string
	// Retry holds the delays between attempts of one notice; nil is
	// DefaultYooKassaRetry, empty (not nil) a single attempt.
	Retry []time.Duration
	// Copies: each notice is delivered this many times, one after the
	// other, each copy attempted until answered 200: what a receiver sees
	// when its answers are lost. 0 is once.
	Copies int
}

// SetYooKassaNotify sets where the simulated shop's notifications go from
// now on.
func (s *Server) SetYooKassaNotify(n YooKassaNotify) {
	y := yooKassaOf(s)
	y.mu.Lock()
	y.notify = n
	y.mu.Unlock()
}

// YooKassaNotices returns the notifications sent since the last reset,
// oldest first, with each one's attempts so far.
func (s *Server) YooKassaNotices() []Notice { return yooKassaOf(s).notices.notices() }

// registerNotifications gives the simulator its notifications; called by
// registerYooKassa.
func (y *ykSim) registerNotifications() {
	y.notices = newNotifier()
	y.notify = YooKassaNotify{URL: os.Getenv(YooKassaNotifyURLEnv)}
	y.s.OnReset(y.notices.reset)
	y.s.OnClose(y.notices.close)
	y.s.Handle("POST /_sim/yookassa/notify", y.handleNotify)
	y.s.Handle("GET /_sim/yookassa/notifications", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"notifications": y.notices.notices()})
	})
}

// ykNotifyWire is the body of POST /_sim/yookassa/notify.
type ykNotifyWire struct {
	URL     string `json:"url"`
	RetryMS []int  `json:"retry_ms"`
	Copies  int    `json:"copies"`
}

// handleNotify serves POST /_sim/yookassa/notify: {"url": …, "retry_ms":
// [20, 20], "copies": 2}; retry_ms left out is the default schedule.
func (y *ykSim) handleNotify(w http.ResponseWriter, r *http.Request) {
	var req ykNotifyWire
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil {
		err = checkNoticeURL(req.URL)
	}
	if err == nil && req.Copies < 0 {
		err = errors.New("copies must not be negative")
	}
	n := YooKassaNotify{URL: req.URL, Copies: req.Copies}
	if req.RetryMS != nil {
		n.Retry = []time.Duration{}
		for _, ms := range req.RetryMS {
			if ms <= 0 && err == nil {
				err = errors.New("retry_ms holds positive milliseconds")
			}
			n.Retry = append(n.Retry, time.Duration(ms)*time.Millisecond)
		}
	}
	if err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad notify: " + err.Error()})
		return
	}
	y.s.SetYooKassaNotify(n)
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// checkNoticeURL accepts an empty URL (none) or an absolute http(s) one.
func checkNoticeURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("the URL must be an absolute http or https URL")
	}
	return nil
}

// ykNotification is the body YooKassa posts, its keys in YooKassa's order.
type ykNotification struct {
	Type   string `json:"type"`
	Event  string `json:"event"`
	Object any    `json:"object"`
}

// notice sends the notification of event about object, if the shop has a
// URL; y.mu is held.
func (y *ykSim) notice(event string, object any) {
	n := y.notify
	if n.URL == "" {
		return
	}
	body, err := json.Marshal(ykNotification{Type: "notification", Event: event, Object: object})
	if err != nil {
		return
	}
	retry := n.Retry
	if retry == nil {
		retry = DefaultYooKassaRetry
	}
	y.notices.post(n.URL, event, "application/json", body, retry, max(n.Copies, 1))
}

// paymentNotice notifies the payment's status, if it is one YooKassa
// notifies of; y.mu is held.
func (y *ykSim) paymentNotice(p *ykPayment) {
	switch p.status {
	case "waiting_for_capture":
		y.notice(YooKassaWaitingForCapture, y.paymentView(p))
	case "succeeded":
		y.notice(YooKassaPaymentSucceeded, y.paymentView(p))
	case "canceled":
		y.notice(YooKassaPaymentCanceled, y.paymentView(p))
	}
}

// refundNotice notifies a succeeded refund; y.mu is held.
func (y *ykSim) refundNotice(r *ykRefund) {
	if r.status == "succeeded" {
		y.notice(YooKassaRefundSucceeded, y.refundView(r))
	}
}

// settleOnTime settles a pending payment or refund when its time comes,
// so that its notification goes without anyone reading it; y.mu is held.
// An object a reset forgot is left alone.
func (y *ykSim) settleOnTime(at time.Time, p *ykPayment, r *ykRefund) {
	time.AfterFunc(time.Until(at), func() {
		y.mu.Lock()
		defer y.mu.Unlock()
		switch {
		case p != nil && y.payments[p.id] == p:
			y.settlePayment(p)
		case r != nil && y.refunds[r.id] == r:
			y.settleRefund(r)
		}
	})
}
