package admin

import "regexp"

// uuidPattern is a UUID as 1C and YooKassa print it (8-4-4-4-12 hex).
const uuidPattern = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// objectFormats are the forms of an object's id at each kind of target,
// as its adapter reports them: 1C's HTTP service a document kind's prefix
// (INV-, SO-, DOC-, a firm's own) and the reference's UUID; 1C's OData
// the document's Ref_Key; Bitrix24 a number; YooKassa a payment id.
var objectFormats = map[string]*regexp.Regexp{
	"onec":       regexp.MustCompile(`^[A-Z]{2,8}-` + uuidPattern + `$`),
	"onec_odata": regexp.MustCompile(`^` + uuidPattern + `$`),
	"bitrix24":   regexp.MustCompile(`^[1-9][0-9]{0,18}$`),
	"yookassa":   regexp.MustCompile(`^` + uuidPattern + `$`),
}

// builtinKinds are the kinds of the built-in target instances, for a
// gateway whose configuration names none.
var builtinKinds = map[string]string{"onec": "onec", "crm": "bitrix24", "payments": "yookassa"}

// targetKind is the kind of the target instance name, "" when unknown.
func (h *Handler) targetKind(name string) string {
	if k := h.d.TargetKinds[name]; k != "" {
		return k
	}
	return builtinKinds[name]
}

// objectFormatOK reports whether id is in the form objects take at the
// target instance name; an instance of a kind without a known form takes
// any id.
func (h *Handler) objectFormatOK(name, id string) bool {
	re, ok := objectFormats[h.targetKind(name)]
	return !ok || re.MatchString(id)
}
