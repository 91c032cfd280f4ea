package intent_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// markDeleted is a firm's compensation: an invoice marked for deletion.
const markDeleted = `name: shop.invoice.mark_deleted
version: 1
target: buh
scope: write
title: { ru: Пометка счёта на удаление, en: Invoice marked for deletion }
labels: { invoice_id: { ru: Счёт, en: Invoice } }
description: Mark an invoice for deletion in 1C.
schema:
  type: object
  additionalProperties: false
  required: [invoice_id]
  properties: { invoice_id: { type: string, minLength: 1, maxLength: 64 } }
map:
  entity: Document_СчетНаОплатуПокупателю
  action: mark_for_deletion
  document: invoice_id
`

// dealLost is a firm's compensation at the CRM: the deal set to lost.
const dealLost = `name: shop.deal.lost
version: 1
target: crm
scope: write
title: { ru: Сделка проиграна, en: Deal lost }
labels: { deal_id: { ru: Сделка, en: Deal } }
description: Set a deal to lost.
schema:
  type: object
  additionalProperties: false
  required: [deal_id]
  properties: { deal_id: { type: string, minLength: 1, maxLength: 20 } }
map:
  method: crm.deal.update
  id: { from: deal_id }
  fields: { STAGE_ID: { value: LOSE } }
`

// A change's map the target refuses is named by the file, the line of
// the path inside it, and what is wrong, as the loader names its own
// refusals; a good one binds.
func TestBind_ChangeMapRefusedAtFileAndLine(t *testing.T) {
	t.Parallel()
	odata, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: "http://127.0.0.1:9/onec-odata/odata/standard.odata", Username: "u"})
	if err != nil {
		t.Fatal(err)
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: "http://127.0.0.1:9/bitrix24/rest/1/secret/"})
	if err != nil {
		t.Fatal(err)
	}
	build := func() map[string]adapters.Target {
		return map[string]adapters.Target{"buh": odata, "crm": crm, "onec": plain{}, "payments": plain{}}
	}
	good := mustLoadDir(t, configtest.Dir(t, map[string]string{"mark.v1.yaml": markDeleted, "lost.v1.yaml": dealLost}))
	if err := good.Bind(build()); err != nil {
		t.Fatalf("good change maps refused: %v", err)
	}
	for _, tc := range []struct{ file, text, want string }{
		{"mark.v1.yaml", strings.Replace(markDeleted, "action: mark_for_deletion", "action: delete", 1),
			`mark.v1.yaml: line 15: intent shop.invoice.mark_deleted v1: map.action: unknown action "delete"`},
		{"mark.v1.yaml", strings.Replace(markDeleted, "document: invoice_id", "document: order_id", 1),
			`mark.v1.yaml: line 16: intent shop.invoice.mark_deleted v1: map.document: the payload has no field "order_id"`},
		{"mark.v1.yaml", markDeleted + "  fields: { Комментарий: { value: x } }\n",
			`mark.v1.yaml: line 17: intent shop.invoice.mark_deleted v1: map.fields: mark_for_deletion sets what its action says and takes no fields`},
		{"lost.v1.yaml", strings.Replace(dealLost, "id: { from: deal_id }", "id: { from: order_id }", 1),
			`lost.v1.yaml: line 15: shop.deal.lost v1: map.id.from: the payload has no string or integer field "order_id"`},
	} {
		dir := configtest.Dir(t, map[string]string{tc.file: tc.text})
		err := mustLoadDir(t, dir).Bind(build())
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) {
			t.Errorf("%s: %v\nwant %s", tc.want, err, tc.want)
		}
	}
}
