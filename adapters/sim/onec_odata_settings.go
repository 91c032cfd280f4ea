package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Duplicate answers: the status and body of a create whose Ref_Key exists
// are not documented (docs/targets.md, What the adapter relies on), so they
// are settings. The default is the one duplicate on record (an
// information register's record, adapters/onecodata/testdata/wire):
// HTTP 400 with code 15.
const (
	// DupUnique: code -1 with the DBMS's «нарушено условие уникальности»,
	// as a public client reports from a live base (with status 500).
	DupUnique = "unique"
	// DupKeyExists: code 15 «Сущность с таким ключом уже существует» (the
	// default, with 400).
	DupKeyExists = "key_exists"
	// DupEmpty: the status alone, no body.
	DupEmpty = "empty"
)

// ODataSettings are the OData simulator's switches for what is unconfirmed.
type ODataSettings struct {
	// DuplicateStatus is the HTTP status of a create refused because its
	// Ref_Key exists (default 400); DuplicateBody its body (DupKeyExists,
	// the default, DupUnique or DupEmpty).
	DuplicateStatus int    `json:"duplicate_status"`
	DuplicateBody   string `json:"duplicate_body"`
	// IgnoreClientKeys makes the base choose every Ref_Key itself.
	IgnoreClientKeys bool `json:"ignore_client_keys"`
	// RefusePosting, when not empty, refuses every posting with this
	// message (500, code -1), as a configuration's posting handler does.
	RefusePosting string `json:"refuse_posting"`
	// RefuseCreate, when not empty, refuses every create with this message
	// (500, code -1), as a configuration's ПередЗаписью or a uniqueness
	// rule of its own does.
	RefuseCreate string `json:"refuse_create"`
	// Unpublished lists entity sets left out of the composition: absent
	// from $metadata and the service document, 404 when asked for.
	Unpublished []string `json:"unpublished"`
	// Truncate cuts a string longer than its attribute's length (the
	// MaxLength $metadata declares) to that length and answers the write
	// 201 or 200 all the same, as a live base was seen doing; otherwise
	// the whole string is kept.
	Truncate bool `json:"truncate"`
	// ClosedUntil, a date (2026-11-30), closes the period up to and
	// including it: a document dated then is not changed, posted or
	// unposted (500, code -1, the configuration's message), as a base with
	// a date of prohibition of changes refuses it.
	ClosedUntil string `json:"closed_until"`
}

func defaultODataSettings() ODataSettings {
	return ODataSettings{DuplicateStatus: http.StatusBadRequest, DuplicateBody: DupKeyExists}
}

func (o *odata) current() ODataSettings {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.settings
}

func (o *odata) set(st ODataSettings) {
	def := defaultODataSettings()
	if st.DuplicateStatus == 0 {
		st.DuplicateStatus = def.DuplicateStatus
	}
	if st.DuplicateBody == "" {
		st.DuplicateBody = def.DuplicateBody
	}
	o.mu.Lock()
	o.settings = st
	o.mu.Unlock()
}

func (o *odata) handleSettingsGet(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, o.current())
}

func (o *odata) handleSettings(w http.ResponseWriter, r *http.Request) {
	st := defaultODataSettings()
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad settings: " + err.Error()})
		return
	}
	switch st.DuplicateBody {
	case "", DupUnique, DupKeyExists, DupEmpty:
	default:
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "duplicate_body must be unique, key_exists or empty"})
		return
	}
	if _, err := time.Parse(time.DateOnly, st.ClosedUntil); st.ClosedUntil != "" && err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "closed_until must be a date, e.g. 2026-11-30"})
		return
	}
	if st.DuplicateStatus != 0 && (st.DuplicateStatus < 400 || st.DuplicateStatus > 599) {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "duplicate_status must be 4xx or 5xx"})
		return
	}
	o.set(st)
	WriteJSON(w, http.StatusOK, o.current())
}
