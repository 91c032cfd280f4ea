package onecodata_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// The write probe reports, per mode the simulator can be put in, what
// the base does and what the gateway will do, and leaves every document
// it made marked for deletion.
func TestWireProbe_Modes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		settings sim.ODataSettings
		keyField string
		usable   bool
		want     []string
	}{
		{"KeepsKeys", sim.ODataSettings{}, "", true, []string{
			"1C keeps the Ref_Key the gateway sends",
			"the same POST sent again was refused: HTTP 400, code 15 (Сущность с таким ключом уже существует): oncegate reads this as \"the document exists\"",
			"1C kept all 70 characters of КлючОперации (its declared length is 50): it does not truncate",
			"1C ignores unknown properties",
			"so oncegate relies on 1C's own key"}},
		{"KeepsKeysUniqueRefusal", sim.ODataSettings{DuplicateStatus: 500, DuplicateBody: sim.DupUnique}, "", true, []string{
			"the same POST sent again was refused: HTTP 500, code -1 (",
			"the configuration's own refusal (code -1)"}},
		{"IgnoresKeys", sim.ODataSettings{IgnoreClientKeys: true}, "", false, []string{
			"1C does NOT keep the Ref_Key the gateway sends",
			"the same POST sent again made a second document (HTTP 201)",
			"so oncegate refuses creates here (TARGET_IGNORES_KEYS) until key_field names"}},
		{"IgnoresKeysGuarded", sim.ODataSettings{IgnoreClientKeys: true}, "КлючОперации", true, []string{
			"1C does NOT keep the Ref_Key",
			"so oncegate guards creates by key_field КлючОперации"}},
		{"Truncates", sim.ODataSettings{Truncate: true}, "", true, []string{
			"1C truncates: КлючОперации was sent with 70 characters and kept 50 (its length)",
			"reported in the answer's warnings as TARGET_CHANGED_VALUE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := sim.New()
			s.SetODataSettings(tc.settings)
			c, _ := keyFieldClient(t, s, tc.keyField)
			reports, err := c.WireProbe(context.Background())
			if err != nil || len(reports) != 1 {
				t.Fatalf("%v %v", reports, err)
			}
			r := reports[0]
			text := strings.Join(r.Lines(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			if r.Usable() != tc.usable {
				t.Errorf("usable = %v, want %v:\n%s", r.Usable(), tc.usable, text)
			}
			if len(r.Made) == 0 || len(r.Unmarked) != 0 {
				t.Fatalf("made %v, unmarked %v", r.Made, r.Unmarked)
			}
			for _, ref := range r.Made {
				doc := odataGet(t, c, ref)
				if doc["DeletionMark"] != true {
					t.Errorf("%s is not marked for deletion: %v", ref, doc)
				}
			}
		})
	}
}

// odataGet reads an invoice by its Ref_Key through CheckObject's read.
func odataGet(t *testing.T, c *onecodata.Client, ref string) map[string]any {
	t.Helper()
	// A document marked for deletion is refused by CheckObject with that
	// reason, which is what is asserted here.
	_, err := c.CheckObject(context.Background(), invoiceOp("k-probe"), ref)
	if err != nil && strings.Contains(err.Error(), "marked for deletion") {
		return map[string]any{"DeletionMark": true}
	}
	return map[string]any{"err": err}
}
