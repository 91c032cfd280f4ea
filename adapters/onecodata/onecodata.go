// Package onecodata is the adapter for 1C:Enterprise through the platform's
// standard OData interface (OData v3, {publication}/odata/standard.odata/):
// a typical configuration, unmodified, publishes its own catalogs and
// documents, and the gateway writes them directly.
//
// Exactly once is enforced by 1C itself: a document's primary key,
// Ref_Key, is chosen by the gateway as a name-based UUID of the target
// instance, the intent and the operation key (RefKey), so 1C refuses a
// second document for one operation, and a lost answer is settled by one
// GET by that key. A base that does not keep a client's Ref_Key is
// detected on the first create and refused from then on, never silently
// trusted with keys of its own choosing — unless a key_field guards: the
// same key written into a string attribute of the document, found by
// $filter on it before anything is sent again (keyfield.go). check
// --probe learns on a copy of the base which it is (probe.go).
//
// Wire facts: 1C Developer Guide 8.3.27, chapter 17.4 (a Markdown copy is
// in github.com/hacker-cb/1c-odata, docs/1c/markdown/17.4_…OData_8_3_27.md).
package onecodata

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/redact"
)

// DefaultTimeout bounds one call to 1C when the configuration names none.
const DefaultTimeout = 5 * time.Second

// Namespace is the RFC 9562 name-space UUID under which every Ref_Key the
// gateway chooses is derived. It is fixed for every installation and must
// never change: a changed namespace gives an operation key already sent a
// new Ref_Key, and 1C would accept a second document for it.
const Namespace = "3c9c0f5e-58c1-4d7a-9a0e-6f2b1d4c8e71"

// maxBody bounds how much of a 1C answer is read.
const maxBody = 1 << 20

// Reference says how an external id of one kind is found in 1C: the
// catalog, and the properties whose values make the id (one, or several
// joined by ":" in the id, e.g. ИНН and КПП: "7707083893:770701001").
type Reference struct {
	Catalog string
	By      []string
}

// ParseBy reads a reference's "by" setting: a property name, or names
// joined by "+" (ИНН+КПП). Description and Наименование are refused:
// names repeat and change, so they never identify anything.
func ParseBy(s string) ([]string, error) {
	var by []string
	for _, p := range strings.Split(s, "+") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("by %q names an empty property", s)
		case strings.EqualFold(p, "Description") || strings.EqualFold(p, "Наименование"):
			return nil, fmt.Errorf("by %q: a name (Description) does not identify an object; use Code, ИНН, ИНН+КПП or an attribute", s)
		}
		by = append(by, p)
	}
	return by, nil
}

// DefaultReferences find the built-in intents' references by Code.
func DefaultReferences() map[string]Reference {
	return map[string]Reference{
		"organization": {Catalog: "Catalog_Организации", By: []string{"Code"}},
		"customer":     {Catalog: "Catalog_Контрагенты", By: []string{"Code"}},
		"counterparty": {Catalog: "Catalog_Контрагенты", By: []string{"Code"}},
		"product":      {Catalog: "Catalog_Номенклатура", By: []string{"Code"}},
		"warehouse":    {Catalog: "Catalog_Склады", By: []string{"Code"}},
	}
}

// Config is how the gateway reaches one OData publication.
type Config struct {
	// Instance is the target instance's name ("buh"): part of every
	// Ref_Key, so two instances never share a document key.
	Instance string
	// BaseURL is the standard interface's root,
	// e.g. "https://1c.example/buh/odata/standard.odata".
	BaseURL string
	// Username and Password are the 1C user (HTTP Basic).
	Username, Password string
	// Zone is the base's time zone: 1C dates are naive local times.
	Zone *time.Location
	// Timeout bounds each call; DefaultTimeout when zero.
	Timeout time.Duration
	// References maps a reference kind to how its ids are found;
	// DefaultReferences when nil.
	References map[string]Reference
	// CacheTTL is how long a resolved reference is reused (30 s when
	// zero, none when negative); CacheSize bounds the cache (1,000 when
	// zero). Only active, unique matches are cached.
	CacheTTL  time.Duration
	CacheSize int
	// KeyField is the documents' string attribute (limited in length, at
	// least 36 characters) where the gateway writes each operation's key,
	// and by which it finds the document, for a base that does not keep
	// client keys; a binding's map.key_field overrides it. "" relies on
	// the Ref_Key alone.
	KeyField string
	// Log receives the loud report of a base ignoring client keys; nil
	// logs nowhere (check still shows it).
	Log *slog.Logger
}

// Client writes and reads one OData publication. It is safe for
// concurrent use once Bind has returned.
type Client struct {
	instance string
	root     string // BaseURL with a trailing slash, never printed
	user     string
	password string
	zone     *time.Location
	refs     map[string]Reference
	http     *http.Client
	log      *slog.Logger
	red      *redact.Redactor
	host     string

	keyField string

	bindings map[bindingKey]*binding
	cache    *refCache

	metaMu sync.Mutex
	meta   *metadata // nil until read once

	// ignored is set when 1C answered a create with a Ref_Key other than
	// the one sent; ignoredNote says when and which.
	ignored     atomic.Bool
	ignoredMu   sync.Mutex
	ignoredNote string
	// ownKeys is set once a create guarded by a key_field was answered
	// with 1C's own Ref_Key.
	ownKeys atomic.Bool
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	// Errors never quote the URL: it may hold credentials.
	switch {
	case err != nil:
		return nil, errors.New("onec_odata: base_url is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return nil, errors.New("onec_odata: base_url must be an absolute http or https URL")
	case u.User != nil:
		return nil, errors.New("onec_odata: base_url must not carry credentials; set the user and password")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, errors.New("onec_odata: base_url must not have a query or fragment")
	case !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/odata/standard.odata"):
		return nil, errors.New("onec_odata: base_url must end in /odata/standard.odata (the standard interface of the publication)")
	case strings.TrimSpace(cfg.Instance) == "":
		return nil, errors.New("onec_odata: the target instance has no name")
	case cfg.Username == "":
		return nil, errors.New("onec_odata: a 1C user is required (Basic auth; OS authentication does not work over OData)")
	case cfg.Timeout < 0:
		return nil, errors.New("onec_odata: timeout must not be negative")
	}
	refs := cfg.References
	if refs == nil {
		refs = DefaultReferences()
	}
	for kind, r := range refs {
		if !strings.HasPrefix(r.Catalog, "Catalog_") || len(r.By) == 0 {
			return nil, fmt.Errorf("onec_odata: references.%s needs a catalog (Catalog_…) and by", kind)
		}
		for _, p := range r.By {
			if _, err := ParseBy(p); err != nil {
				return nil, fmt.Errorf("onec_odata: references.%s: %v", kind, err)
			}
		}
	}
	zone := cfg.Zone
	if zone == nil {
		zone = time.UTC
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/"
	return &Client{
		instance: cfg.Instance,
		root:     u.String(),
		user:     cfg.Username,
		password: cfg.Password,
		zone:     zone,
		refs:     refs,
		keyField: strings.TrimSpace(cfg.KeyField),
		log:      cfg.Log,
		red:      redact.New(redact.Basic(cfg.Username, cfg.Password), redact.Name(cfg.Username)),
		host:     u.Host,
		http: &http.Client{
			Transport: adapters.NewTransport(),
			Timeout:   timeout,
			// A redirect (a login page, another publication) is answered
			// as a status, never followed with the credentials.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		bindings: map[bindingKey]*binding{},
		cache:    newRefCache(cfg.CacheTTL, cfg.CacheSize),
	}, nil
}

// Name implements adapters.Target.
func (c *Client) Name() string { return "onec_odata" }

// String names the client without its URL or credentials.
func (c *Client) String() string { return "onec_odata client " + c.instance }

// DedupesByKey implements adapters.Deduper: 1C refuses a second object
// with a Ref_Key it holds, so sending a create again is harmless. Not so
// where a key_field guards (a base that may ignore client keys): 1C
// itself refuses nothing there, so a create is sent again only once a
// look-up by the key_field has found nothing.
func (c *Client) DedupesByKey() bool { return !c.keyFieldBinding() }

// Secrets implements adapters.Secretive.
func (c *Client) Secrets() []redact.Secret {
	return []redact.Secret{redact.Basic(c.user, c.password), redact.Name(c.user)}
}

// RefKey is the Ref_Key of the document an operation creates: the RFC 9562
// version-5 UUID, under Namespace, of the instance's name, the intent and
// the operation key, joined by NUL bytes (none of them holds one).
func RefKey(instance, intent, key string) string {
	ns := parseUUID(Namespace)
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(instance + "\x00" + intent + "\x00" + key))
	sum := h.Sum(nil)
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // the RFC's variant
	return formatUUID(u)
}

func parseUUID(s string) [16]byte {
	var u [16]byte
	h := strings.ReplaceAll(s, "-", "")
	for i := range 16 {
		fmt.Sscanf(h[2*i:2*i+2], "%02x", &u[i])
	}
	return u
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// IgnoresKeys reports whether 1C was seen answering a create with a
// Ref_Key other than the one sent, and what was seen.
func (c *Client) IgnoresKeys() (bool, string) {
	if !c.ignored.Load() {
		return false, ""
	}
	c.ignoredMu.Lock()
	defer c.ignoredMu.Unlock()
	return true, c.ignoredNote
}

// keysIgnored records, and reports loudly, a create answered with another
// Ref_Key: from now on every create at this target is refused.
func (c *Client) keysIgnored(set, sent, got string) *adapters.Error {
	note := fmt.Sprintf("at %s 1C answered a create in %s sent with Ref_Key %s with Ref_Key %s: this base does not keep the keys the gateway chooses, so it cannot refuse a second document for one operation",
		time.Now().UTC().Format(time.RFC3339), set, sent, got)
	c.ignoredMu.Lock()
	c.ignoredNote = note
	c.ignoredMu.Unlock()
	c.ignored.Store(true)
	if c.log != nil {
		c.log.Error("1C IGNORES CLIENT KEYS: creates at this target are refused from now on; check the document by hand",
			"target", c.instance, "entity_set", set, "sent", sent, "got", got)
	}
	return &adapters.Error{Class: adapters.Final, Code: codes.TargetIgnoresKeys, ObjectID: got,
		Message: "1C created the document under a key of its own choosing instead of the operation's: this base does not keep client keys, so further creates at this target are refused; the document created is target_object_id, check it by hand",
		Err:     errors.New(note)}
}

// keysIgnoredGuarded notes, once, a create answered with 1C's own
// Ref_Key where a key_field guards: no refusal, the look-ups go by the
// key_field, and check says what this base does.
func (c *Client) keysIgnoredGuarded(b *binding, sent, got string) {
	if c.ownKeys.Swap(true) || c.log == nil {
		return
	}
	c.log.Warn("1C does not keep client keys at this target: documents are found by key_field, and 1C itself refuses no second document",
		"target", c.instance, "entity_set", b.entity, "key_field", b.keyField, "sent", sent, "got", got)
}

// ignoringError refuses a create, sending nothing, at a target seen
// ignoring client keys (adapters.Misconfigured).
func (c *Client) ignoringError() *adapters.Error {
	_, note := c.IgnoresKeys()
	// Retry, as any refusal of the gateway's own set-up: nothing was sent,
	// and the key goes through once an administrator fixes the target.
	return adapters.Misconfigured(codes.TargetIgnoresKeys,
		"this 1C base does not keep the document keys the gateway chooses, so nothing is created there (a second document could not be refused); nothing was sent",
		errors.New(note))
}
