package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// A simulated 1C keeping its numbers in a file goes on from them in its
// next run, each kind of document by its own count; a file that is not
// one of them is refused, naming it.
func TestOneCNumbersKept(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "numbers.json")
	invoice := func(s *sim.Server, base, order string) string {
		t.Helper()
		a := onecCall(t, "POST", base+onecBase+"/operations", "test:invoice.create:"+order+":v1",
			onecBody("invoice.create", onecPrint1, strings.Replace(onecInvoice, "order-1", order, 1)))
		if a.Status != 201 {
			t.Fatalf("invoice %s: %+v", order, a)
		}
		return a.Number
	}

	s, base := onecServe(t)
	if err := s.KeepOneCNumbers(file); err != nil {
		t.Fatal(err)
	}
	invoice(s, base, "order-a")
	if n := invoice(s, base, "order-b"); n != "ОГ00-000002" {
		t.Fatalf("second invoice %s", n)
	}
	if _, err := s.MakeOneCDocument("sales_order"); err != nil {
		t.Fatal(err)
	}

	next, nextBase := onecServe(t) // the next run
	if err := next.KeepOneCNumbers(file); err != nil {
		t.Fatal(err)
	}
	if n := invoice(next, nextBase, "order-c"); n != "ОГ00-000003" {
		t.Fatalf("the next run's first invoice is %s, want ОГ00-000003", n)
	}
	a := onecCall(t, "POST", nextBase+onecBase+"/operations", "test:sales_order.create_draft:d-1:v1", onecBody("sales_order.create_draft", onecPrint1, onecDraft))
	if a.Status != 201 || a.Number != "ОГ00-000002" {
		t.Fatalf("the next run's first sales order: %+v, want ОГ00-000002", a)
	}

	os.WriteFile(file, []byte("not numbers"), 0o600)
	if err := sim.New().KeepOneCNumbers(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("a bad file: %v", err)
	}
}
