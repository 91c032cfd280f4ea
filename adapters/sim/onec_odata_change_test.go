package sim_test

import (
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// Each change the OData simulator applies counts once under
// onec_odata_changes by the document's Ref_Key, a change to what is
// already so counts nothing, and a posted document is refused its
// deletion mark (1C's 500 with code -1) until it is unposted.
func TestOData_ChangesCounted(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	doc := odataInvoices + "(guid'" + odataRef1 + "')"
	if status, _, body := odataCall(t, "POST", base, odataInvoices+"?$format=json", "", odataInvoiceBody(odataRef1)); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	patch := func(body string) (int, string) {
		status, _, answer := odataCall(t, "PATCH", base, doc+"?$format=json", "", body)
		return status, answer
	}
	for range 2 {
		if status, body := patch(`{"Комментарий":"возврат"}`); status != 200 {
			t.Fatalf("PATCH: %d %s", status, body)
		}
	}
	if got := s.Effects(sim.OneCODataChanges, odataRef1); got != 1 {
		t.Fatalf("after one update sent twice: %d changes, want 1", got)
	}
	if status, _, body := odataCall(t, "POST", base, doc+"/Post?PostingModeOperational=false", "", ""); status != 200 {
		t.Fatalf("post: %d %s", status, body)
	}
	if status, body := patch(`{"DeletionMark":true}`); status != 500 || odataErrCode(t, body) != "-1" {
		t.Fatalf("a posted document marked for deletion: %d %s, want 500 code -1", status, body)
	}
	for range 2 {
		if status, _, body := odataCall(t, "POST", base, doc+"/Unpost", "", ""); status != 200 {
			t.Fatalf("unpost: %d %s", status, body)
		}
	}
	for range 2 {
		if status, body := patch(`{"DeletionMark":true}`); status != 200 {
			t.Fatalf("mark: %d %s", status, body)
		}
	}
	if got := s.Effects(sim.OneCODataChanges, odataRef1); got != 3 {
		t.Fatalf("update, unpost and mark, each sent twice: %d changes, want 3", got)
	}

	// A closed period refuses every write of the document.
	s.SetODataSettings(sim.ODataSettings{ClosedUntil: "2026-12-04"})
	if status, body := patch(`{"Комментарий":"ещё"}`); status != 500 || odataErrCode(t, body) != "-1" {
		t.Fatalf("a change in the closed period: %d %s", status, body)
	}
	if got := s.Effects(sim.OneCODataChanges, odataRef1); got != 3 {
		t.Fatalf("a refused change counted: %d", got)
	}
}
