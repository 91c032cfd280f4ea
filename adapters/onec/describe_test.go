package onec_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
)

// Describe reads who an external id names from 1C's own register: a
// counterparty's name and ИНН, a product's name alone; an id the register
// does not hold, or a kind it has none of, is ErrNotFound.
func TestDescribe(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t, time.Second)
	var _ adapters.Describer = c
	ctx := context.Background()
	for _, tc := range []struct{ kind, id, name, inn, kpp string }{
		{"customer", "customer-1042", "ООО «Вектор»", "7702104200", "770201001"},
		{"customer", "customer-2001", "ИП Соколов А. В.", "770220010001", ""},
		{"organization", "org-main", "ООО «Ромашка»", "7701000001", "770101001"},
		{"product", "product-778", "Кофе в зёрнах 1 кг", "", ""},
	} {
		p, err := c.Describe(ctx, tc.kind, tc.id)
		if err != nil || p.Name != tc.name || p.INN != tc.inn || p.KPP != tc.kpp {
			t.Errorf("%s %s = %+v, %v; want %q, ИНН %q, КПП %q", tc.kind, tc.id, p, err, tc.name, tc.inn, tc.kpp)
		}
	}
	for _, tc := range [][2]string{{"customer", "customer-nobody"}, {"supplier", "customer-1042"}, {"customer", "../sales-orders/x"}, {"customer", ""}} {
		if _, err := c.Describe(ctx, tc[0], tc[1]); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("%s %q: %v, want ErrNotFound", tc[0], tc[1], err)
		}
	}
}

// A module published before the route existed answers its publication's
// bare 404: the gateway cannot tell who the id names, which is neither
// "no such customer" nor a fault of 1C.
func TestDescribeOlderModule(t *testing.T) {
	t.Parallel()
	s := sim.New()
	older := http.NewServeMux()
	older.HandleFunc("/onec/hs/oncegate/v1/references/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Not Found", http.StatusNotFound) // no template matches: the platform's own answer
	})
	older.Handle("/", s)
	ts := httptest.NewServer(older)
	t.Cleanup(ts.Close)
	c := MustNew(t, ts.URL+"/onec", time.Second)
	_, err := c.Describe(context.Background(), "customer", "customer-1042")
	if !errors.Is(err, adapters.ErrCannotDescribe) || errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("an older module: %v, want ErrCannotDescribe", err)
	}
	if strings.Contains(err.Error(), strings.TrimPrefix(ts.URL, "http://")) || strings.Contains(err.Error(), testPassword) {
		t.Fatalf("the error names the publication or the password: %v", err)
	}
}

// A failing service is a failure of the read, never "not found".
func TestDescribeUnavailable(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, time.Second)
	if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: http.StatusServiceUnavailable, Times: 1, On: sim.OnLookup}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Describe(context.Background(), "customer", "customer-1042")
	if err == nil || errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotDescribe) {
		t.Fatalf("a 503: %v, want a failure", err)
	}
}
