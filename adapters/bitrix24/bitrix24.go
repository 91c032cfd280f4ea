// Package bitrix24 is the CRM target: Bitrix24 REST reached through an
// inbound webhook. It serves the built-in intent crm.callback.create by
// creating an outgoing call activity ("call the customer back") bound to
// the customer's contact, and declared intents, each the add of a lead,
// deal, contact, company or activity with its fields mapped from the
// payload (declared.go).
//
// Idempotency lever: Bitrix24 stores an external origin on every activity,
// ORIGINATOR_ID (the source system) and ORIGIN_ID (the object's id there).
// The adapter writes ORIGINATOR_ID = Originator and ORIGIN_ID = the operation
// key verbatim (on activities and every entity a declared intent adds) (both columns are VARCHAR(255) and a key is at most 255 ASCII
// characters, so no derived key is needed), and Lookup lists activities
// filtered by the pair. Bitrix24 does not enforce uniqueness of ORIGIN_ID:
// two adds with one key make two activities. Calls for one key must therefore
// be serialized by the gateway's lease, and Execute sends the add so that a
// connection lost after the request was written is Reconcile, never Retry.
//
// Customers are resolved inside the boundary by their stable external id:
// a contact carries ORIGINATOR_ID = Originator and ORIGIN_ID = customer_id.
// A contact whose boolean user field BlockedField is set is a blocked
// customer. A declared intent's references are resolved alike, each kind in
// the entity Config.References names (a customer is a contact, a company a
// company).
package bitrix24

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Intent is the one intent this target serves.
const Intent = "crm.callback.create"

// Originator is the ORIGINATOR_ID ("external source") oncegate writes on the
// activities it creates and expects on the contacts it resolves.
const Originator = "oncegate"

// BlockedField is the contact user field (type boolean, created once by the
// portal administrator with crm.contact.userfield.add) that marks a customer
// blocked: "1", "Y" or true is blocked; absent, empty, "0" or "N" is active.
// Bitrix24 contacts have no built-in "inactive" state.
const BlockedField = "UF_CRM_ONCEGATE_BLOCKED"

// Values of crm.activity.add fields (crm_enum_* in the REST reference).
const (
	ownerTypeContact   = 3 // OWNER_TYPE_ID / ENTITY_TYPE_ID: contact
	activityTypeCall   = 2 // TYPE_ID: call
	directionOutgoing  = 2 // DIRECTION: outgoing
	priorityMedium     = 2 // PRIORITY: medium
	descriptionPlain   = 1 // DESCRIPTION_TYPE: plain text
	callbackSubject    = "Call back the customer"
	maxCommentRunes    = 500
	maxOriginIDLen     = 255 // b_crm_act.ORIGIN_ID VARCHAR(255)
	defaultTimeout     = 5 * time.Second
	bitrixDateTimeForm = "2006-01-02T15:04:05-07:00" // ISO 8601 with a numeric offset, as the REST examples use
)

// Config configures the adapter.
type Config struct {
	// WebhookURL is the inbound webhook, e.g.
	// https://portal.bitrix24.ru/rest/1/<secret>/. It is a secret in itself:
	// it never appears in an error, a log line or a result.
	WebhookURL string
	// Timeout bounds one HTTP call; 5s when zero.
	Timeout time.Duration
	// Rate is the portal's request rate, which every call of the client
	// (adds, look-ups, checks) keeps to: Bitrix24 Cloud allows 2 a second
	// with a bucket of 50 (5 and 250 on Enterprise) and refuses beyond it
	// with 503 QUERY_LIMIT_EXCEEDED (https://apidocs.bitrix24.com/limits.html).
	// Zero is no pacing.
	Rate adapters.Rate
	// References maps each kind of external id a declared intent may
	// reference ("customer") to the entity it is found in by its origin
	// fields: "contact" or "company". Nil is DefaultReferences.
	References map[string]string
	// TimeZone is the portal's zone, for fields mapped with date: local;
	// nil refuses such mappings.
	TimeZone *time.Location
}

// Client is the Bitrix24 target. It is safe for concurrent use.
type Client struct {
	base   string // webhook URL ending in "/"; a secret
	userID int    // the webhook's user, responsible when a contact has none
	http   *http.Client
	pace   *adapters.Pacer

	refs map[string]string // reference kind → entity it is found in
	zone *time.Location    // for date: local; may be nil

	mu      sync.Mutex
	resetAt map[string]time.Time  // method → its operating_reset_at, as last announced
	bound   map[bindKey]*declared // declared intents (nil value: the built-in)
}

var errWebhookURL = errors.New("bitrix24: the webhook URL must look like https://<portal>/rest/<user_id>/<secret>/")

// New checks cfg and returns a client. Its errors never repeat the URL.
func New(cfg Config) (*Client, error) {
	base, userID, ok := parseWebhookURL(cfg.WebhookURL)
	if !ok {
		return nil, errWebhookURL
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("bitrix24: timeout must not be negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	if cfg.Rate.PerSecond < 0 || cfg.Rate.Burst < 0 {
		return nil, errors.New("bitrix24: the rate must not be negative")
	}
	refs := cfg.References
	if refs == nil {
		refs = DefaultReferences()
	}
	for kind, e := range refs {
		if _, ok := refEntities[e]; !ok || kind == "" {
			return nil, fmt.Errorf("bitrix24: references.%s: entity %q is none the CRM resolves references in (contact, company)", kind, e)
		}
	}
	return &Client{
		refs:    refs,
		zone:    cfg.TimeZone,
		base:    base,
		userID:  userID,
		pace:    adapters.NewPacer(cfg.Rate),
		resetAt: map[string]time.Time{},
		http: &http.Client{
			Transport: adapters.NewTransport(),
			Timeout:   timeout,
			// A redirect would carry the secret path to wherever the
			// answer points; refuse it and report the 3xx instead.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// parseWebhookURL accepts an absolute http(s) URL whose path ends in
// /rest/<user_id>/<secret>, with or without the trailing slash, and returns
// it normalized to end in "/".
func parseWebhookURL(raw string) (string, int, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", 0, false
	}
	segs := strings.Split(strings.TrimSuffix(u.EscapedPath(), "/"), "/")
	if len(segs) < 4 || segs[len(segs)-3] != "rest" {
		return "", 0, false
	}
	// The user id must be a number; whether that user has this webhook is
	// the portal's to say (401 NO_AUTH_FOUND).
	userID, err := strconv.Atoi(segs[len(segs)-2])
	if err != nil || userID < 0 || segs[len(segs)-1] == "" {
		return "", 0, false
	}
	u.RawPath = ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/"
	return u.String(), userID, true
}

// String describes the client without its secret.
func (c *Client) String() string {
	return "bitrix24 webhook client (user " + strconv.Itoa(c.userID) + ")"
}

// GoString keeps %#v from printing the webhook URL.
func (c *Client) GoString() string { return c.String() }

// Name implements adapters.Target.
func (c *Client) Name() string { return "bitrix24" }

// LookupCalls implements adapters.PagedLookup: a look-up by key follows up to
// maxPages pages of crm.activity.list, then, when it found nothing, asks
// whether the webhook's user sees everything (user.admin).
func (c *Client) LookupCalls() int { return maxPages + 1 }

// payload is crm.callback.create's normalized payload.
type payload struct {
	CustomerID string    `json:"customer_id"`
	DueAt      time.Time `json:"-"`
	Comment    string    `json:"comment,omitempty"`
}

// decodePayload checks op as far as this adapter relies on it. The gateway
// has validated the payload already; these are the adapter's own guards.
func decodePayload(op adapters.Op) (payload, error) {
	if op.Intent != Intent {
		return payload{}, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
			Message: "the CRM target serves only crm.callback.create"}
	}
	var raw struct {
		CustomerID *string `json:"customer_id"`
		DueAt      *string `json:"due_at"`
		Comment    *string `json:"comment"`
	}
	dec := json.NewDecoder(bytes.NewReader(op.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return payload{}, invalid("", "the payload is not a valid crm.callback.create payload", err)
	}
	var p payload
	if raw.CustomerID == nil || *raw.CustomerID == "" {
		return payload{}, invalid("customer_id", "customer_id is required", nil)
	}
	p.CustomerID = *raw.CustomerID
	if raw.DueAt == nil {
		return payload{}, invalid("due_at", "due_at is required", nil)
	}
	due, err := time.Parse(time.RFC3339, *raw.DueAt)
	if err != nil {
		return payload{}, invalid("due_at", "due_at must be an RFC 3339 date-time", err)
	}
	p.DueAt = due.UTC()
	if raw.Comment != nil {
		if utf8.RuneCountInString(*raw.Comment) > maxCommentRunes {
			return payload{}, invalid("comment", "comment must be at most 500 characters", nil)
		}
		p.Comment = *raw.Comment
	}
	return p, nil
}

func invalid(field, msg string, cause error) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: codes.Validation, Field: field, Message: msg, Err: cause}
}

// checkKey refuses a key that cannot be stored whole in ORIGIN_ID; a cut key
// could match another operation's activity.
func checkKey(key string) error {
	if key == "" || len(key) > maxOriginIDLen {
		return &adapters.Error{Class: adapters.Final, Code: codes.Validation,
			Message: "the operation key does not fit the CRM's external id field"}
	}
	return nil
}

// Validate resolves the customer (a declared intent's references) and
// reports what Execute would create. It writes nothing.
func (c *Client) Validate(ctx context.Context, op adapters.Op) (adapters.Plan, error) {
	if d, ok, err := c.declaredOf(op); err != nil {
		return adapters.Plan{}, err
	} else if ok {
		return c.validateDeclared(ctx, d, op)
	}
	p, err := decodePayload(op)
	if err != nil {
		return adapters.Plan{}, err
	}
	ct, err := c.resolveCustomer(ctx, p.CustomerID)
	if err != nil {
		return adapters.Plan{}, err
	}
	return adapters.Plan{Data: map[string]any{
		"customer_id":    p.CustomerID,
		"contact_id":     ct.id,
		"responsible_id": c.responsible(ct),
		"due_at":         p.DueAt.Format(time.RFC3339),
	}}, nil
}

// Execute resolves the customer and adds the callback activity carrying
// op.Key (a declared intent: its references, and its entity's add). It does not look up first: the gateway looks up before executing
// a key that was attempted before, and holds the lease meanwhile.
func (c *Client) Execute(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if err := checkKey(op.Key); err != nil {
		return adapters.Result{}, err
	}
	if d, ok, err := c.declaredOf(op); err != nil {
		return adapters.Result{}, err
	} else if ok {
		return c.executeDeclared(ctx, d, op)
	}
	p, err := decodePayload(op)
	if err != nil {
		return adapters.Result{}, err
	}
	ct, err := c.resolveCustomer(ctx, p.CustomerID)
	if err != nil {
		return adapters.Result{}, err
	}
	due := p.DueAt.Format(bitrixDateTimeForm)
	fields := map[string]any{
		"OWNER_TYPE_ID":    ownerTypeContact,
		"OWNER_ID":         ct.id,
		"TYPE_ID":          activityTypeCall,
		"DIRECTION":        directionOutgoing,
		"SUBJECT":          callbackSubject,
		"DESCRIPTION":      p.Comment,
		"DESCRIPTION_TYPE": descriptionPlain,
		"START_TIME":       due, // DEADLINE of a call is taken from START_TIME
		"END_TIME":         due,
		"COMPLETED":        "N",
		"PRIORITY":         priorityMedium,
		"RESPONSIBLE_ID":   c.responsible(ct),
		"COMMUNICATIONS": []map[string]any{{
			"ENTITY_ID":      ct.id,
			"ENTITY_TYPE_ID": ownerTypeContact,
			"VALUE":          ct.phone,
		}},
		"ORIGINATOR_ID": Originator,
		"ORIGIN_ID":     op.Key,
	}
	r, err := c.call(ctx, "crm.activity.add", map[string]any{"fields": fields}, true)
	if err != nil {
		return adapters.Result{}, err
	}
	id, ok := positiveID(r.Result)
	if !ok {
		// A 200 without an id: whether the activity exists is unknown.
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the CRM answered without an activity id", Err: errors.New("crm.activity.add: result is not an id")}
	}
	return result(id, ct.id), nil
}

// Lookup finds the effect an earlier attempt of op created, by
// ORIGINATOR_ID and ORIGIN_ID: the activity of crm.callback.create, or the
// record of a declared intent in its entity's list. It returns
// adapters.ErrNotFound when there is none and the webhook's user reads
// every record (else Reconcile: a record hidden from the user cannot be
// told from none). Should there be several (the lease failed to serialize
// attempts), the lowest id is the answer, so every lookup names the same
// one.
func (c *Client) Lookup(ctx context.Context, op adapters.Op) (adapters.Result, error) {
	if err := checkKey(op.Key); err != nil {
		return adapters.Result{}, err
	}
	if d, ok, err := c.declaredOf(op); err != nil {
		return adapters.Result{}, err
	} else if ok && d.idFrom != "" {
		return c.lookupUpdate(ctx, d, op)
	} else if ok {
		id, _, err := c.lookupOrigin(ctx, op.Key, d.entity.list, d.entity.noun, []string{"ID", "ORIGINATOR_ID", "ORIGIN_ID"}, "")
		if err != nil {
			return adapters.Result{}, err
		}
		return d.result(id), nil
	}
	id, owner, err := c.lookupOrigin(ctx, op.Key, "crm.activity.list", "activity",
		[]string{"ID", "OWNER_ID", "OWNER_TYPE_ID", "ORIGINATOR_ID", "ORIGIN_ID"}, "OWNER_ID")
	if err != nil {
		return adapters.Result{}, err
	}
	return result(id, owner), nil
}

// lookupOrigin lists method's records carrying (Originator, key) and
// returns the lowest id and the field extra of that record. noun names the
// records in the refusal of a user who may not see them all.
func (c *Client) lookupOrigin(ctx context.Context, key, method, noun string, sel []string, extra string) (string, string, error) {
	var (
		best, bestExtra string
		bestN           int64
	)
	err := c.list(ctx, method, map[string]any{
		"filter": map[string]any{"ORIGINATOR_ID": Originator, "ORIGIN_ID": key},
		"select": sel,
		"order":  map[string]string{"ID": "ASC"},
	}, func(raw json.RawMessage) (bool, error) {
		var rows []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &rows); err != nil {
			return false, err
		}
		for _, row := range rows {
			var id, originator, origin, more text
			for name, dst := range map[string]*text{"ID": &id, "ORIGINATOR_ID": &originator, "ORIGIN_ID": &origin, extra: &more} {
				if v, ok := row[name]; ok && name != "" {
					if err := json.Unmarshal(v, dst); err != nil {
						return false, fmt.Errorf("field %s: %w", name, err)
					}
				}
			}
			// The filter compares under MySQL's case-insensitive collation;
			// only an exact match is this operation's record.
			if string(originator) != Originator || string(origin) != key {
				continue
			}
			n, err := strconv.ParseInt(string(id), 10, 64)
			if err != nil || n <= 0 {
				continue
			}
			if best == "" || n < bestN {
				best, bestN, bestExtra = string(id), n, string(more)
			}
		}
		return true, nil
	})
	if err != nil {
		return "", "", err
	}
	if best != "" {
		return best, bestExtra, nil
	}
	// A list leaves out, without a word, the records the webhook's user
	// may not read (its CRM role: own, department, all). An empty list is
	// "not found" only for a user who reads everything; for another, the
	// record may exist out of its sight (a contact handed to another
	// manager), and adding it again would be a second effect.
	admin, err := c.isAdmin(ctx)
	if err != nil {
		return "", "", err
	}
	if !admin {
		return "", "", &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the CRM webhook's user may not see every " + noun + ", so the CRM's empty answer does not prove there is none; make the webhook's user a Bitrix24 administrator",
			Err:     errors.New(method + ": nothing found, and user.admin is false for the webhook's user")}
	}
	return "", "", adapters.ErrNotFound
}

// isAdmin asks the portal whether the webhook's user is an administrator
// (user.admin, scope basic, which every webhook may call:
// https://apidocs.bitrix24.com/api-reference/common/users/user-admin.html).
// An administrator reads every CRM record whatever the CRM roles say. It
// is asked anew each time, so a change of rights counts at once; only a
// look-up that found nothing asks.
func (c *Client) isAdmin(ctx context.Context) (bool, error) {
	r, err := c.call(ctx, "user.admin", map[string]any{}, false)
	if err != nil {
		return false, adapters.ReadFailure(err)
	}
	var admin bool
	if err := json.Unmarshal(r.Result, &admin); err != nil {
		return false, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
			Message: "the CRM answered in an unexpected shape", Err: fmt.Errorf("user.admin: %w", err)}
	}
	return admin, nil
}

// result is the normalized outcome; Execute and Lookup give the same one.
func result(activityID, contactID string) adapters.Result {
	return adapters.Result{
		ObjectID: activityID,
		Data:     map[string]any{"activity_id": activityID, "contact_id": contactID},
	}
}

// contact is a resolved reference: a contact (a customer) or a company.
type contact struct {
	id          string
	responsible string // ASSIGNED_BY_ID, may be empty
	phone       string // first phone, may be empty
}

// responsible is who gets the callback: the contact's responsible manager,
// else the webhook's own user.
func (c *Client) responsible(ct contact) string {
	if n, err := strconv.Atoi(ct.responsible); err == nil && n > 0 {
		return ct.responsible
	}
	return strconv.Itoa(c.userID)
}

// resolveCustomer finds the one active contact whose external origin is
// (Originator, externalID). It never searches by name or free text.
func (c *Client) resolveCustomer(ctx context.Context, externalID string) (contact, error) {
	return c.resolveOrigin(ctx, "contact", "customer", "customer_id", externalID)
}

// resolveOrigin finds the one active record of entity (contact or company)
// whose external origin is (Originator, externalID): the reference of
// kind held by the payload field. It never searches by name or free text.
func (c *Client) resolveOrigin(ctx context.Context, entity, kind, field, externalID string) (contact, error) {
	found, blocked, err := c.findOrigin(ctx, entity, externalID)
	if err != nil {
		return contact{}, err
	}
	switch len(found) {
	case 0:
		return contact{}, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceNotFound, Field: field,
			Message: "no " + kind + " with this " + field + " exists in the CRM"}
	case 1:
	default:
		return contact{}, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceAmbiguous, Field: field,
			Message: "more than one CRM " + entity + " carries this " + field}
	}
	if blocked[0] {
		return contact{}, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceInactive, Field: field,
			Message: "the " + kind + " is blocked in the CRM"}
	}
	return found[0], nil
}

// findOrigin lists the records of entity whose external origin is exactly
// (Originator, externalID), stopping at the second, and whether each is
// blocked.
func (c *Client) findOrigin(ctx context.Context, entity, externalID string) (found []contact, blocked []bool, err error) {
	err = c.list(ctx, "crm."+entity+".list", map[string]any{
		"filter": map[string]any{"ORIGINATOR_ID": Originator, "ORIGIN_ID": externalID},
		"select": []string{"ID", "ORIGINATOR_ID", "ORIGIN_ID", "ASSIGNED_BY_ID", "PHONE", BlockedField},
		"order":  map[string]string{"ID": "ASC"},
	}, func(raw json.RawMessage) (bool, error) {
		var rows []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &rows); err != nil {
			return false, err
		}
		for _, row := range rows {
			var id, originator, origin, assigned, flag text
			var phones []struct {
				Value string `json:"VALUE"`
			}
			for name, dst := range map[string]*text{"ID": &id, "ORIGINATOR_ID": &originator, "ORIGIN_ID": &origin, "ASSIGNED_BY_ID": &assigned, BlockedField: &flag} {
				if v, ok := row[name]; ok {
					if err := json.Unmarshal(v, dst); err != nil {
						return false, fmt.Errorf("%s field %s: %w", entity, name, err)
					}
				}
			}
			if string(originator) != Originator || string(origin) != externalID || id == "" {
				continue
			}
			if v, ok := row["PHONE"]; ok {
				json.Unmarshal(v, &phones) // a malformed phone list only loses the number
			}
			ct := contact{id: string(id), responsible: string(assigned)}
			if len(phones) > 0 {
				ct.phone = phones[0].Value
			}
			found = append(found, ct)
			blocked = append(blocked, isSet(string(flag)))
		}
		return len(found) < 2, nil
	})
	return found, blocked, err
}

func isSet(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "Y", "TRUE":
		return true
	}
	return false
}
