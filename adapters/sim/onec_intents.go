package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The firm's own intents on the simulated 1C service. A firm adds an
// intent by adding its handler to the routing table of the service's
// module (adapters/onec/bsl); the simulator is told which it has, and
// keeps each as a generic document (DOC-<uuid>, state created, the
// payload as received) registered under the same key register as the
// built-ins: a key makes one document, is looked up by intent and key,
// counts in /_sim/effects under "onec", and takes the same faults.

// OneCDocument is a document an extra intent made at the simulated 1C.
type OneCDocument struct {
	ObjectID string
	Number   string
	Intent   string
	// Payload is the payload as the service received it.
	Payload json.RawMessage
}

// PublishOneC sets the extra intents the simulated 1C service publishes
// beyond its built-ins (invoice.create, sales_order.create_draft,
// sales_order.post), replacing the earlier list; no names, none. A name
// the service could not route by (not an intent name, or longer than the
// register's 50 characters) is refused, and nothing changes.
func (s *Server) PublishOneC(intents ...string) error {
	return s.onec.publish(intents)
}

// OneCPublished lists the intents the simulated 1C service publishes,
// built-ins included, sorted.
func (s *Server) OneCPublished() []string {
	return s.onec.list()
}

// OneCDocuments returns the documents extra intents made at the simulated
// 1C for intent ("" for every intent), in the order they were made.
func (s *Server) OneCDocuments(intent string) []OneCDocument {
	o := s.onec
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OneCDocument
	for _, d := range o.docs {
		if d.payload != nil && (intent == "" || d.intent == intent) {
			out = append(out, OneCDocument{ObjectID: d.objectID, Number: d.number, Intent: d.intent, Payload: slices.Clone(d.payload)})
		}
	}
	slices.SortFunc(out, func(a, b OneCDocument) int { return strings.Compare(a.Number, b.Number) })
	return out
}

// onecPublishable checks that the service could route by name.
func onecPublishable(name string) error {
	switch {
	case !onecIntentName.MatchString(name):
		return fmt.Errorf("%q is not an intent name", name)
	case utf8.RuneCountInString(name) > onecMaxIntent:
		return fmt.Errorf("%q is longer than %d characters", name, onecMaxIntent)
	}
	return nil
}

func (o *onec) publish(intents []string) error {
	extra := make(map[string]bool, len(intents))
	for _, name := range intents {
		if err := onecPublishable(name); err != nil {
			return err
		}
		switch name {
		case onecInvoiceCreate, onecOrderDraft, onecOrderPost:
		default:
			extra[name] = true
		}
	}
	o.mu.Lock()
	o.extra = extra
	o.mu.Unlock()
	return nil
}

func (o *onec) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := []string{onecInvoiceCreate, onecOrderDraft, onecOrderPost}
	for name := range o.extra {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// handlePublish serves POST /_sim/onec/intents {"intents": [...]}: the
// extra intents the service publishes from now on (PublishOneC).
func (o *onec) handlePublish(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Intents []string `json:"intents"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad intents: " + err.Error()})
		return
	}
	if err := o.publish(body.Intents); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"intents": o.list()})
}

// handlePublished serves GET /_sim/onec/intents: every intent the service
// publishes, built-ins included.
func (o *onec) handlePublished(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]any{"intents": o.list()})
}

// SetOneCLockTimeout sets how long a call to the simulated 1C service
// waits for another call's managed lock on the same key before it is
// answered 503 LOCK_CONFLICT (OneCLockTimeout by default, 1C's own
// default). It is the infobase's setting, not its data: a reset keeps it.
func (s *Server) SetOneCLockTimeout(d time.Duration) {
	o := s.onec
	o.mu.Lock()
	o.lockWait = d
	o.mu.Unlock()
}
