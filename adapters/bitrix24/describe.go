package bitrix24

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Describe implements adapters.Describer for the kinds the target resolves
// (Config.References: a customer is a contact, a company a company). The
// record is found by its external origin, as a reference is resolved — a
// blocked one too: it is still who the id names —, read with
// crm.contact.get or crm.company.get, and its ИНН is the RQ_INN of its
// first requisite that has one (crm.requisite.list by ENTITY_TYPE_ID and
// ENTITY_ID, in the portal's order: SORT, then ID). A contact's name is
// LAST_NAME NAME SECOND_NAME, a company's its TITLE. It only reads. A
// kind the target does not resolve, or an id no record carries, is
// adapters.ErrNotFound.
func (c *Client) Describe(ctx context.Context, kind, id string) (adapters.Party, error) {
	entity, ok := c.refs[kind]
	if !ok || strings.TrimSpace(id) == "" {
		return adapters.Party{}, adapters.ErrNotFound
	}
	found, _, err := c.findOrigin(ctx, entity, id)
	switch {
	case err != nil:
		return adapters.Party{}, err
	case len(found) == 0:
		return adapters.Party{}, adapters.ErrNotFound
	case len(found) > 1:
		return adapters.Party{}, &adapters.Error{Class: adapters.Final, Code: codes.ReferenceAmbiguous,
			Message: "more than one CRM " + entity + " carries this external id"}
	}
	recID := found[0].id

	r, err := c.call(ctx, "crm."+entity+".get", map[string]any{"id": recID}, false)
	if err != nil {
		if errors.Is(err, errNoRecord) {
			return adapters.Party{}, adapters.ErrNotFound // deleted since the list
		}
		return adapters.Party{}, adapters.ReadFailure(err)
	}
	// The record holds multiple fields (PHONE, EMAIL: arrays) beside the
	// scalars; only the names are read.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.Result, &raw); err != nil {
		return adapters.Party{}, shapeError("crm."+entity+".get", err)
	}
	rec := map[string]text{}
	for _, f := range []string{"TITLE", "NAME", "SECOND_NAME", "LAST_NAME"} {
		if v, ok := raw[f]; ok {
			var t text
			if err := json.Unmarshal(v, &t); err != nil {
				return adapters.Party{}, shapeError("crm."+entity+".get", fmt.Errorf("field %s: %w", f, err))
			}
			rec[f] = t
		}
	}
	var name string
	if entity == "company" {
		name = strings.TrimSpace(string(rec["TITLE"]))
	} else {
		name = joinNonEmpty(rec["LAST_NAME"], rec["NAME"], rec["SECOND_NAME"])
	}
	if name == "" {
		return adapters.Party{}, adapters.ErrNotFound
	}
	inn, err := c.requisiteINN(ctx, refEntities[entity], recID)
	if err != nil {
		return adapters.Party{}, err
	}
	return adapters.Party{Name: name, INN: inn}, nil
}

// requisiteINN is the RQ_INN of the first requisite of the record (CRM
// object type typeID, id) that has one; "" when none has.
func (c *Client) requisiteINN(ctx context.Context, typeID int, id string) (string, error) {
	want := strconv.Itoa(typeID)
	var inn string
	err := c.list(ctx, "crm.requisite.list", map[string]any{
		"filter": map[string]any{"ENTITY_TYPE_ID": typeID, "ENTITY_ID": id},
		"select": []string{"ID", "ENTITY_TYPE_ID", "ENTITY_ID", "RQ_INN"},
		"order":  map[string]string{"SORT": "ASC", "ID": "ASC"},
	}, func(raw json.RawMessage) (bool, error) {
		var rows []map[string]text
		if err := json.Unmarshal(raw, &rows); err != nil {
			return false, err
		}
		for _, row := range rows {
			if string(row["ENTITY_TYPE_ID"]) != want || string(row["ENTITY_ID"]) != id {
				continue
			}
			if v := strings.TrimSpace(string(row["RQ_INN"])); v != "" {
				inn = v
				return false, nil
			}
		}
		return true, nil
	})
	return inn, err
}

// shapeError is an answer of method the adapter cannot read.
func shapeError(method string, err error) error {
	return &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
		Message: "the CRM answered in an unexpected shape", Err: fmt.Errorf("%s: %w", method, err)}
}

// joinNonEmpty joins the non-empty parts with a space.
func joinNonEmpty(parts ...text) string {
	var out []string
	for _, p := range parts {
		if s := strings.TrimSpace(string(p)); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}
