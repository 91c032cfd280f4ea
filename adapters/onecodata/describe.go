package onecodata

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/oncegate/oncegate/adapters"
)

// innCatalogs are the catalogs whose objects carry an ИНН.
var innCatalogs = map[string]bool{"Catalog_Контрагенты": true, "Catalog_Организации": true}

// Describe reads the name (Description) and, for counterparties and
// organizations, the ИНН of the object an external id of kind names: one
// GET of its catalog filtered as a reference is resolved.
func (c *Client) Describe(ctx context.Context, kind, id string) (adapters.Party, error) {
	r, ok := c.refs[kind]
	if !ok || len(r.By) != 1 {
		return adapters.Party{}, adapters.ErrNotFound
	}
	sel := "Description"
	if innCatalogs[r.Catalog] {
		sel += ",ИНН,КПП"
	}
	q := url.Values{
		"$filter": {r.By[0] + " eq '" + strings.ReplaceAll(id, "'", "''") + "'"},
		"$select": {sel},
		"$top":    {"2"},
		"$format": {"json"},
	}
	status, h, body, err := c.readCall(ctx, c.entityURL(r.Catalog, "", "", q))
	if err != nil {
		return adapters.Party{}, adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		return adapters.Party{}, adapters.ReadFailure(c.classify(parseError(status, body), h))
	}
	var list struct {
		Value []struct {
			Description string `json:"Description"`
			INN         string `json:"ИНН"`
			KPP         string `json:"КПП"`
		} `json:"value"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return adapters.Party{}, fmt.Errorf("1C answered a catalog query with a body the gateway could not read")
	}
	if len(list.Value) != 1 {
		return adapters.Party{}, adapters.ErrNotFound
	}
	return adapters.Party{Name: list.Value[0].Description, INN: list.Value[0].INN, KPP: list.Value[0].KPP}, nil
}
