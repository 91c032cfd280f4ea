package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// GET /onec/hs/oncegate/v1/documents/{object_id}?intent= reads a document
// by its object id, as the module's ДокументGET does: the document the
// service made under that id, or one a person made in 1C itself, found by
// its prefix and UUID; answered as {"object_id", "kind", "number",
// "state"} plus "operation_key" when the call names an intent and the key
// register holds an entry of that intent pointing at the document (the
// key that made it; for sales_order.post, the key that posted it). 404
// NOT_FOUND for any other id, a malformed one included. It only reads: no
// call or effect is counted, and it takes lookup faults.

// onecDeleted is the state of a document marked for deletion (1C's
// ПометкаУдаления): not a draft, never posted.
const onecDeleted = "deleted"

// onecKinds are the kinds of documents by the prefix of their object ids:
// the words of the module's register of external ids. The module's
// generic document of a firm's intent is kind "document" here; a firm's
// own handler names its own kind.
var onecKinds = map[string]string{
	OneCInvoicePrefix:  "invoice",
	OneCOrderPrefix:    "sales_order",
	OneCDocumentPrefix: "document",
}

// onecKindOf is the kind of the document with objectID.
func onecKindOf(objectID string) string {
	for prefix, kind := range onecKinds {
		if strings.HasPrefix(objectID, prefix) {
			return kind
		}
	}
	return ""
}

// onecDocumentAnswer is what the service answers for one document.
type onecDocumentAnswer struct {
	ObjectID     string `json:"object_id"`
	Kind         string `json:"kind"`
	Number       string `json:"number"`
	State        string `json:"state"`
	OperationKey string `json:"operation_key,omitempty"`
}

// handleDocument serves GET …/documents/{object_id}.
func (o *onec) handleDocument(w http.ResponseWriter, r *http.Request) {
	f := o.s.TakeFault(OneC, OnLookup)
	if onecInternalFault(w, f) || f.Before(w) {
		return
	}
	status, body := o.document(r.PathValue("object_id"), r.URL.Query().Get("intent"))
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

// document answers for id and, when intent is not empty, the key of the
// operation of intent whose effect the document is. A key names an
// operation only together with its intent, as in the register: an order a
// draft made and a post posted carries one key of each.
func (o *onec) document(id, intent string) (int, any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	doc, ok := o.docs[id]
	if !ok {
		return http.StatusNotFound, onecFail(onecNotFound, "", "no document with this id")
	}
	a := onecDocumentAnswer{ObjectID: doc.objectID, Kind: onecKindOf(doc.objectID), Number: doc.number, State: doc.state}
	if intent != "" {
		for _, rec := range o.register {
			if rec.Intent == intent && rec.ObjectID == id {
				a.OperationKey = rec.Key
				break
			}
		}
	}
	return http.StatusOK, a
}

// MakeOneCDocument makes a document at the simulated 1C as a person would
// in 1C itself, outside the service: kind "invoice" (state created) or
// "sales_order" (state draft), numbered as the service numbers its own.
// No operation key registers it and the register of external ids does not
// hold it, so, as with the module, only GET …/documents/{object_id} finds
// it (by its prefix and UUID); the order status and sales_order.post do
// not know it. It returns the document's object id.
func (s *Server) MakeOneCDocument(kind string) (string, error) {
	o := s.onec
	o.mu.Lock()
	defer o.mu.Unlock()
	var prefix, state string
	var n int
	switch kind {
	case "invoice":
		o.invoices++
		prefix, state, n = OneCInvoicePrefix, onecCreated, o.invoices
	case "sales_order":
		o.orders++
		prefix, state, n = OneCOrderPrefix, onecDraft, o.orders
	default:
		return "", fmt.Errorf("no document kind %q: invoice or sales_order", kind)
	}
	id := prefix + onecUUID()
	// No intent: the document is nobody's effect, and the routes that
	// find documents through the register of external ids skip it.
	o.docs[id] = &onecDoc{objectID: id, number: fmt.Sprintf("ОГ00-%06d", n), state: state}
	o.saveNumbers() // a failure shows at the next KeepOneCNumbers
	return id, nil
}

// SetOneCDocumentState changes a document at the simulated 1C as a person
// would in 1C: "posted" (posted by hand), "deleted" (marked for
// deletion), or back to "draft" or "created". The key register keeps what
// it recorded, as the module's does.
func (s *Server) SetOneCDocumentState(objectID, state string) error {
	switch state {
	case onecCreated, onecDraft, onecPosted, onecDeleted:
	default:
		return fmt.Errorf("no document state %q", state)
	}
	o := s.onec
	o.mu.Lock()
	defer o.mu.Unlock()
	doc, ok := o.docs[objectID]
	if !ok {
		return fmt.Errorf("no document %q", objectID)
	}
	doc.state = state
	return nil
}
