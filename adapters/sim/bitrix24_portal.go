package sim

// What the Bitrix24 simulator enforces as a cloud portal does: the one
// inbound webhook it accepts, the REST limits, and what each user may see.
//
// Limits (https://apidocs.bitrix24.com/limits.html and the system errors
// of the REST reference): every request adds one to a leaky bucket that
// drains PerSecond a second; a request that finds it at Bucket is refused
// with 503 QUERY_LIMIT_EXCEEDED "Too many requests" and runs nothing.
// Each method's execution time is summed over the last OperatingWindow;
// past OperatingBudget the method is blocked for everyone, answering 429
// OPERATION_TIME_LIMIT "Method is blocked due to operation time limit."
// until enough of that time has left the window. Every answer's "time"
// carries "operating" (the call's execution time) and "operating_reset_at"
// (Unix seconds: when the oldest execution time counted for the method
// leaves the window, releasing part of the limit).
//
// Rights: crm.*.list shows a user only the records the user may read,
// silently leaving the others out; crm.activity.get of one of them is
// refused with 400 "Access denied.". An administrator (user.admin true)
// reads everything; any other user reads the leads, deals, contacts and
// companies whose responsible (ASSIGNED_BY_ID) is in its view (itself and
// its Teams entry), and the activities whose RESPONSIBLE_ID is in its view
// or whose owner record it reads.

import (
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bitrix24 simulator defaults: the webhook the built-in targets use when
// BITRIX24_WEBHOOK_URL is not set, and a cloud portal's limits on plans
// below Enterprise.
const (
	DefaultBitrix24User   = 1
	DefaultBitrix24Secret = "sim-webhook"
)

// Environment variables the Bitrix24 simulator reads in New (so also
// `oncegate sim` and serve's built-in simulators): the webhook it accepts,
// and a faster leaky bucket for tests and demos.
const (
	Bitrix24WebhookEnv = "BITRIX24_WEBHOOK_URL"
	Bitrix24RateEnv    = "BITRIX24_SIM_RATE_PER_SECOND"
	Bitrix24BucketEnv  = "BITRIX24_SIM_BUCKET"
)

// Bitrix24Portal is what the Bitrix24 simulator enforces.
type Bitrix24Portal struct {
	// WebhookUser and WebhookSecret are the one inbound webhook accepted
	// (/rest/<user>/<secret>/); anything else is 401 NO_AUTH_FOUND.
	WebhookUser   int
	WebhookSecret string
	// Admins read every CRM record; other users read what Teams allows.
	Admins []int
	// Teams lists, per user, the users whose records that user reads
	// besides its own.
	Teams map[int][]int
	// PerSecond and Bucket are the leaky bucket of requests.
	PerSecond float64
	Bucket    int
	// OperatingBudget of execution time per method within OperatingWindow.
	OperatingBudget time.Duration
	OperatingWindow time.Duration
	// OperatingPerCall, when set, is the execution time every call counts
	// instead of the measured one (a simulated call takes microseconds).
	OperatingPerCall time.Duration
	// SubscriptionEnded: the portal's plan has ended, and every call
	// through the webhook is answered PAYMENT_REQUIRED "Subscription has
	// been ended" (with 402: the status is not documented), doing nothing.
	SubscriptionEnded bool
}

// DefaultBitrix24Portal is a cloud portal below Enterprise: 2 requests a
// second with a bucket of 50, 480 s of execution time per method in 10
// minutes, user 1 an administrator. The webhook is the one in
// BITRIX24_WEBHOOK_URL when that holds a webhook URL, else user 1 with
// DefaultBitrix24Secret; BITRIX24_SIM_RATE_PER_SECOND and
// BITRIX24_SIM_BUCKET, when set, replace the bucket's figures.
func DefaultBitrix24Portal() Bitrix24Portal {
	p := Bitrix24Portal{
		WebhookUser: DefaultBitrix24User, WebhookSecret: DefaultBitrix24Secret,
		Admins:    []int{1},
		PerSecond: 2, Bucket: 50,
		OperatingBudget: 480 * time.Second, OperatingWindow: 10 * time.Minute,
	}
	if user, secret, ok := Bitrix24Webhook(os.Getenv(Bitrix24WebhookEnv)); ok {
		p.WebhookUser, p.WebhookSecret = user, secret
	}
	if v, err := strconv.ParseFloat(os.Getenv(Bitrix24RateEnv), 64); err == nil && v > 0 {
		p.PerSecond = v
	}
	if v, err := strconv.Atoi(os.Getenv(Bitrix24BucketEnv)); err == nil && v > 0 {
		p.Bucket = v
	}
	return p
}

// Bitrix24Webhook reads the user id and secret of an inbound webhook URL
// (…/rest/<user>/<secret>/).
func Bitrix24Webhook(raw string) (user int, secret string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return 0, "", false
	}
	segs := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	if len(segs) < 3 || segs[len(segs)-3] != "rest" || segs[len(segs)-1] == "" {
		return 0, "", false
	}
	user, err = strconv.Atoi(segs[len(segs)-2])
	if err != nil || user <= 0 {
		return 0, "", false
	}
	return user, segs[len(segs)-1], true
}

// Bitrix24WebhookPath is the path of the webhook a new simulator accepts
// (DefaultBitrix24Portal), below its /bitrix24 prefix:
// "/rest/<user>/<secret>/".
func Bitrix24WebhookPath() string {
	p := DefaultBitrix24Portal()
	return "/rest/" + strconv.Itoa(p.WebhookUser) + "/" + p.WebhookSecret + "/"
}

// SetBitrix24Portal replaces what the Bitrix24 simulator enforces and
// empties its bucket and execution-time accounts.
func (s *Server) SetBitrix24Portal(p Bitrix24Portal) {
	s.b24.limits.Lock()
	s.b24.portal = p
	s.b24.level, s.b24.levelAt = 0, time.Time{}
	s.b24.operating = map[string][]b24Spent{}
	s.b24.limits.Unlock()
}

// Bitrix24Refusals counts the calls the portal's limits refused since the
// last reset, by error code (QUERY_LIMIT_EXCEEDED, OPERATION_TIME_LIMIT).
func (s *Server) Bitrix24Refusals() map[string]int {
	s.b24.limits.Lock()
	defer s.b24.limits.Unlock()
	out := make(map[string]int, len(s.b24.refused))
	for k, v := range s.b24.refused {
		out[k] = v
	}
	return out
}

// AssignBitrix24Contact makes user the responsible of the contact with
// the external id, and of its open activities, as a portal that hands
// open activities to a contact's new responsible does.
func (s *Server) AssignBitrix24Contact(externalID string, user int) bool {
	b := s.b24
	b.mu.Lock()
	defer b.mu.Unlock()
	id := ""
	for _, c := range b.contacts {
		if c["ORIGIN_ID"] == externalID {
			c["ASSIGNED_BY_ID"], id = strconv.Itoa(user), c["ID"].(string)
		}
	}
	if id == "" {
		return false
	}
	for _, a := range b.activities {
		if a["OWNER_ID"] == id && a["COMPLETED"] != "Y" {
			a["RESPONSIBLE_ID"] = strconv.Itoa(user)
		}
	}
	return true
}

// b24Spent is execution time a method spent at a moment.
type b24Spent struct {
	at time.Time
	d  time.Duration
}

// b24Limits is the portal state behind Bitrix24Portal.
type b24Limits struct {
	limits    sync.Mutex
	portal    Bitrix24Portal
	level     float64   // requests in the bucket at levelAt
	levelAt   time.Time // when level was last drained
	operating map[string][]b24Spent
	refused   map[string]int
}

func (l *b24Limits) portalNow() Bitrix24Portal {
	l.limits.Lock()
	defer l.limits.Unlock()
	return l.portal
}

// authorized reports whether the call came through the accepted webhook.
func (l *b24Limits) authorized(r *http.Request) (user int, ok bool) {
	p := l.portalNow()
	user, err := strconv.Atoi(r.PathValue("user"))
	return user, err == nil && user == p.WebhookUser && r.PathValue("secret") == p.WebhookSecret
}

// admit applies the limits to a call of method at now: the status and
// code refusing it, or 0 when it may run.
func (l *b24Limits) admit(method string, now time.Time) (int, string) {
	l.limits.Lock()
	defer l.limits.Unlock()
	p := l.portal
	if p.PerSecond > 0 && p.Bucket > 0 {
		if !l.levelAt.IsZero() {
			l.level = math.Max(0, l.level-now.Sub(l.levelAt).Seconds()*p.PerSecond)
		}
		l.levelAt = now
		if l.level+1 > float64(p.Bucket) {
			l.refused["QUERY_LIMIT_EXCEEDED"]++
			return http.StatusServiceUnavailable, "QUERY_LIMIT_EXCEEDED"
		}
		l.level++
	}
	if p.OperatingBudget > 0 && l.spent(method, now) > p.OperatingBudget {
		l.refused["OPERATION_TIME_LIMIT"]++
		return http.StatusTooManyRequests, "OPERATION_TIME_LIMIT"
	}
	return 0, ""
}

// spent is method's execution time within the window ending at now,
// dropping what left it. Called with l.limits held.
func (l *b24Limits) spent(method string, now time.Time) time.Duration {
	list := l.operating[method]
	i := 0
	for i < len(list) && now.Sub(list[i].at) >= l.portal.OperatingWindow {
		i++
	}
	list = list[i:]
	l.operating[method] = list
	var total time.Duration
	for _, s := range list {
		total += s.d
	}
	return total
}

// account records a finished call's execution time and returns what the
// answer's time block says of the method: the time counted and when
// part of the limit is released.
func (l *b24Limits) account(method string, started, now time.Time) (operating float64, resetAt int64) {
	l.limits.Lock()
	defer l.limits.Unlock()
	d := now.Sub(started)
	if l.portal.OperatingPerCall > 0 {
		d = l.portal.OperatingPerCall
	}
	l.spent(method, now)
	l.operating[method] = append(l.operating[method], b24Spent{at: now, d: d})
	oldest := l.operating[method][0].at
	return d.Seconds(), int64(math.Ceil(float64(oldest.Add(l.portal.OperatingWindow).UnixNano()) / 1e9))
}

func (l *b24Limits) resetLimits() {
	l.limits.Lock()
	l.level, l.levelAt = 0, time.Time{}
	l.operating = map[string][]b24Spent{}
	l.refused = map[string]int{}
	l.limits.Unlock()
}

// b24Sees is the record filter of a user: whether it may read a contact,
// and an activity (by its responsible or its contact).
type b24Sees struct {
	all  bool
	view []string // user ids whose records are readable
}

func (l *b24Limits) seesOf(user int) b24Sees {
	p := l.portalNow()
	if slices.Contains(p.Admins, user) {
		return b24Sees{all: true}
	}
	view := []string{strconv.Itoa(user)}
	for _, u := range p.Teams[user] {
		view = append(view, strconv.Itoa(u))
	}
	return b24Sees{view: view}
}

func (s b24Sees) contact(c b24Record) bool { return s.record(c) }

// record: a lead, deal, contact or company is read by its responsible's view.
func (s b24Sees) record(r b24Record) bool {
	return s.all || slices.Contains(s.view, b24Scalar(r["ASSIGNED_BY_ID"]))
}

// activity: by its responsible, or through the record it is bound to
// (owner, nil when there is none).
func (s b24Sees) activity(a b24Record, owner b24Record) bool {
	if s.all || slices.Contains(s.view, b24Scalar(a["RESPONSIBLE_ID"])) {
		return true
	}
	return owner != nil && s.record(owner)
}

// handleRefusals answers GET /_sim/bitrix24/refusals.
func (s *Server) handleBitrix24Refusals(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, s.Bitrix24Refusals())
}
