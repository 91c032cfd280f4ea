package admin

import (
	"testing"
	"time"

	"github.com/oncegate/oncegate/views"
)

func TestFormatMoney(t *testing.T) {
	t.Parallel()
	const s = nbsp
	for _, tc := range []struct {
		minor          int64
		currency, lang string
		want           string
	}{
		{125000, "RUB", "ru", "1" + s + "250,00" + s + "₽"},
		{125000, "rub", "en", "₽1,250.00"},
		{5, "RUB", "ru", "0,05" + s + "₽"},
		{123456789012, "USD", "ru", "1" + s + "234" + s + "567" + s + "890,12" + s + "$"},
		{99, "EUR", "en", "€0.99"},
		{100000, "CHF", "ru", "1" + s + "000,00" + s + "CHF"},
		{1500, "JPY", "ru", "1" + s + "500" + s + "JPY"},
		{1500, "KWD", "en", "1.500" + s + "KWD"},
		{-250, "RUB", "ru", "−2,50" + s + "₽"},
	} {
		if got := formatMoney(tc.minor, tc.currency, tc.lang); got != tc.want {
			t.Errorf("formatMoney(%d, %s, %s) = %q, want %q", tc.minor, tc.currency, tc.lang, got, tc.want)
		}
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 11, 5, 0, 0, time.UTC)
	msk := time.FixedZone("MSK", 3*3600)
	if got, want := formatTime(at, msk, "ru"), "02.12.2026"+nbsp+"14:05"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := formatTime(at, msk, "en"), "2026-12-02"+nbsp+"14:05"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := formatTime(time.Time{}, msk, "ru"); got != "—" {
		t.Fatalf("zero time %q", got)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	ru := views.LabelsFor("ru")
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "меньше минуты"},
		{5 * time.Minute, "5" + nbsp + "мин"},
		{2*time.Hour + 5*time.Minute, "2" + nbsp + "ч 5" + nbsp + "мин"},
		{3 * time.Hour, "3" + nbsp + "ч"},
		{76 * time.Hour, "3" + nbsp + "дн 4" + nbsp + "ч"},
		{48 * time.Hour, "2" + nbsp + "дн"},
	} {
		if got := formatDuration(tc.d, ru); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"merchant-account-17": "merc…t-17",
		"customer-1042":       "cust…1042",
		"Оплата заказа":       "Опла…каза",
		"short-id":            "sh…id",
		"abcd":                "…",
		"":                    "",
	} {
		if got := mask(in); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                        "/admin/",
		"/admin/approvals":        "/admin/approvals",
		"/admin/operations?x=1":   "/admin/operations?x=1",
		"/admin":                  "/admin",
		"//evil.example/admin/":   "/admin/",
		"https://evil.example/":   "/admin/",
		"/\\evil.example":         "/admin/",
		"/other":                  "/admin/",
		"/administrator":          "/admin/",
		"/admin/login?next=/x":    "/admin/",
		"javascript:alert(1)":     "/admin/",
		"/admin/\r\nSet-Cookie:x": "/admin/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeyPath(t *testing.T) {
	t.Parallel()
	if got, want := keyPath("prod:crm.callback:create:event-90173:v1"), "prod%3Acrm.callback%3Acreate%3Aevent-90173%3Av1"; got != want {
		t.Fatalf("keyPath = %q, want %q", got, want)
	}
}

func TestMaskedFields(t *testing.T) {
	t.Parallel()
	p := parsePayload([]byte(`{"order_id":"order-1","amount_minor":125000,"currency":"RUB","description":"<b>Оплата заказа</b>","items":[{"comment":"позвонить утром","quantity":2}]}`))
	fields, tables := newRequestView(nil, p, "ru", false).show(p)
	got := map[string]string{}
	for _, f := range fields {
		got[f.Label] = f.Value
	}
	for k, want := range map[string]string{
		"order_id": "order-1", "amount_minor": "1" + nbsp + "250,00" + nbsp + "₽", "description": "<b>О…</b>",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if len(tables) != 1 || len(tables[0].Rows) != 1 || tables[0].Rows[0][0] != "позв…тром" || tables[0].Rows[0][1] != "2" {
		t.Errorf("items shown as %+v, want one line with its comment masked", tables)
	}
	// Whoever decides sees it as the agent sent it.
	fields, tables = newRequestView(nil, p, "ru", true).show(p)
	for _, f := range fields {
		if f.Label == "description" && f.Value != "<b>Оплата заказа</b>" {
			t.Errorf("description shown in full as %q", f.Value)
		}
	}
	if tables[0].Rows[0][0] != "позвонить утром" {
		t.Errorf("items shown in full as %+v", tables)
	}
	if got, want := p.amount("ru"), "1"+nbsp+"250,00"+nbsp+"₽"; got != want {
		t.Fatalf("amount %q, want %q", got, want)
	}
}

func TestZoneName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 11, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		loc  *time.Location
		want string
	}{
		{time.FixedZone("MSK", 3*3600), "MSK, UTC+03:00"},
		{time.UTC, "UTC+00:00"},
		{time.FixedZone("+05", 5*3600), "UTC+05:00"},
		{time.FixedZone("", -3*3600-1800), "UTC-03:30"},
	} {
		if got := zoneName(at.In(tc.loc)); got != tc.want {
			t.Errorf("zoneName in %v = %q, want %q", tc.loc, got, tc.want)
		}
	}
}
