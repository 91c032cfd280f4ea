package onecodata_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oncegate/oncegate/adapters"
)

// Describe reads who an id names from 1C itself: the counterparty's name
// and ИНН, a product's name; an id 1C does not hold is ErrNotFound.
func TestDescribe(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, nil)
	ctx := context.Background()
	p, err := f.c.Describe(ctx, "counterparty", "customer-1042")
	if err != nil || p.Name != "ООО «Вектор»" || p.INN != "7702104200" || p.KPP != "770201001" {
		t.Fatalf("counterparty customer-1042 = %+v, %v", p, err)
	}
	p, err = f.c.Describe(ctx, "product", "product-778")
	if err != nil || p.Name != "Кофе в зёрнах 1 кг" || p.INN != "" {
		t.Fatalf("product-778 = %+v, %v", p, err)
	}
	if _, err := f.c.Describe(ctx, "counterparty", "customer-nobody"); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("an unknown counterparty: %v, want ErrNotFound", err)
	}
	if _, err := f.c.Describe(ctx, "counterparty", "x' or Code ne '"); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("a quote in the id: %v, want ErrNotFound", err)
	}
	if f.posts.Load() != 0 {
		t.Fatalf("Describe wrote %d times", f.posts.Load())
	}
	var _ adapters.Describer = f.c
}
