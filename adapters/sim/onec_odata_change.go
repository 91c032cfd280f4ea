package sim

import (
	"fmt"
	"reflect"
	"strings"
)

// Changes of existing objects at the OData simulator: a PATCH (a mark for
// deletion, an update of properties) and a document's Unpost. Each applied
// change counts once in GET /_sim/effects under "onec_odata_changes", by
// the object's Ref_Key; a change that sets what is already set counts
// nothing, as it changes nothing. The refusals are 1C's: a posted document
// is not marked for deletion (its posting is cancelled first), and with
// ODataSettings.ClosedUntil a document dated on or before that day is not
// written at all (the configuration's date of prohibition of changes).

// Effect names of changes, beside the creations counted under the
// target's own name.
const (
	// OneCODataChanges counts the changes applied at the OData simulator,
	// by Ref_Key.
	OneCODataChanges = "onec_odata_changes"
	// Bitrix24Changes counts the updates applied at the Bitrix24
	// simulator, by the record's ID.
	Bitrix24Changes = "bitrix24_changes"
)

// odataPostedMark is the refusal of a deletion mark on a posted document.
const odataPostedMark = "Проведенный документ не может быть помечен на удаление. Сначала отмените проведение документа."

// closedRefusal is the configuration's refusal of any write of a document
// in the closed period, "" when the document may be written. The caller
// holds o.mu.
func (o *odata) closedRefusal(t *odataType, e map[string]any) string {
	until := o.settings.ClosedUntil
	date, _ := e["Date"].(string)
	if !t.Document || until == "" || len(date) < 10 || date[:10] > until {
		return ""
	}
	return fmt.Sprintf("Не удалось записать \"%s\" от %s: данные закрытого периода не могут быть изменены (дата запрета изменения: %s).",
		t.Set, dotDate(date[:10]), dotDate(until))
}

// dotDate writes 2026-11-30 as 1C's messages do: 30.11.2026.
func dotDate(iso string) string {
	p := strings.Split(iso, "-")
	if len(p) != 3 {
		return iso
	}
	return p[2] + "." + p[1] + "." + p[0]
}

// patchRefusal is 1C's refusal of the PATCH in of e, "" when none. The
// caller holds o.mu.
func (o *odata) patchRefusal(t *odataType, e, in map[string]any) string {
	if msg := o.closedRefusal(t, e); msg != "" {
		return msg
	}
	if mark, _ := in["DeletionMark"].(bool); mark && t.Document && e["Posted"] == true && e["DeletionMark"] != true {
		return odataPostedMark
	}
	return ""
}

// snapshot copies what a PATCH may change of e, to tell afterwards
// whether it changed anything.
func snapshot(e map[string]any) map[string]any {
	out := make(map[string]any, len(e))
	for k, v := range e {
		if k != "DataVersion" {
			out[k] = v
		}
	}
	return out
}

// changedSince reports whether e differs from its snapshot before.
func changedSince(before, e map[string]any) bool {
	after := snapshot(e)
	return !reflect.DeepEqual(before, after)
}
