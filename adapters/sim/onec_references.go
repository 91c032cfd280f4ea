package sim

import (
	"net/http"
	"strings"
)

// GET /onec/hs/oncegate/v1/references/{kind}/{external_id} says who an
// external id names, as the module's ВнешнийИдентификаторGET does: the
// object the id register holds for (kind, id) — a catalog item, never a
// document — answered as {"kind", "id", "name"} plus "inn" and "kpp" for
// the catalogs that hold them (counterparties, organizations); 404
// NOT_FOUND for an id the register does not hold. It only reads: no call
// or effect is counted, and it takes lookup faults.

// onecParty is what the service answers for one catalog item.
type onecParty struct {
	Kind string  `json:"kind"`
	ID   string  `json:"id"`
	Name string  `json:"name"`
	INN  *string `json:"inn,omitempty"`
	KPP  *string `json:"kpp,omitempty"`
}

// onecCatalogs are the seeded catalogs of the id register by kind, and
// the OData catalog holding the same items' names (the one database both
// interfaces read).
var onecCatalogs = map[string]struct {
	items map[string]RefState
	odata string
}{
	"organization": {Organizations, odataOrgs},
	"customer":     {Customers, odataParties},
	"product":      {Products, odataProducts},
	"warehouse":    {Warehouses, odataStores},
	"unit":         {Units, ""},
}

// onecUnitNames are the units' names (the OData slice serves no unit
// catalog).
var onecUnitNames = map[string]string{"pcs": "шт", "kg": "кг"}

// handleReference serves GET …/references/{kind}/{external_id}.
func (o *onec) handleReference(w http.ResponseWriter, r *http.Request) {
	f := o.s.TakeFault(OneC, OnLookup)
	if onecInternalFault(w, f) || f.Before(w) {
		return
	}
	status, body := onecDescribe(r.PathValue("kind"), r.PathValue("external_id"))
	if f.After(w) {
		return
	}
	WriteJSON(w, status, body)
}

// onecDescribe answers for (kind, id) from the seeded register.
func onecDescribe(kind, id string) (int, any) {
	notFound := onecFail(onecNotFound, "", "no object with this external id")
	cat, ok := onecCatalogs[kind]
	if !ok {
		return http.StatusNotFound, notFound
	}
	if _, ok := cat.items[id]; !ok {
		return http.StatusNotFound, notFound
	}
	p := onecParty{Kind: kind, ID: id, Name: onecUnitNames[id]}
	for _, seed := range odataSeeds {
		if cat.odata == "" || seed.set != cat.odata || seed.code != id {
			continue
		}
		p.Name = strings.TrimSpace(seed.name)
		// The catalogs with a tax id answer it even when empty, as the
		// module writes every attribute the catalog has.
		if cat.odata == odataParties || cat.odata == odataOrgs {
			inn, _ := seed.props["ИНН"].(string)
			kpp, _ := seed.props["КПП"].(string)
			p.INN, p.KPP = &inn, &kpp
		}
	}
	return http.StatusOK, p
}
