package admin

import "testing"

func TestPlural(t *testing.T) {
	t.Parallel()
	invoices := [3]string{"счёт", "счёта", "счетов"}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "0 счетов"}, {1, "1 счёт"}, {2, "2 счёта"}, {3, "3 счёта"}, {4, "4 счёта"},
		{5, "5 счетов"}, {9, "9 счетов"}, {10, "10 счетов"}, {11, "11 счетов"}, {12, "12 счетов"},
		{14, "14 счетов"}, {15, "15 счетов"}, {20, "20 счетов"}, {21, "21 счёт"}, {22, "22 счёта"},
		{25, "25 счетов"}, {101, "101 счёт"}, {111, "111 счетов"}, {112, "112 счетов"}, {122, "122 счёта"},
	} {
		if got := plural(tc.n, invoices); got != tc.want {
			t.Errorf("plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got, want := plural(1, [3]string{"invoice", "invoices", "invoices"}), "1 invoice"; got != want {
		t.Errorf("English: %q, want %q", got, want)
	}
}
