package admin

import (
	"testing"

	"github.com/oncegate/oncegate/views"
)

func TestTargetErrorText(t *testing.T) {
	t.Parallel()
	l := views.LabelsFor("ru")
	for _, tc := range []struct{ raw, want string }{
		{"onec: HTTP 503 Service Unavailable", "1С временно недоступен (HTTP 503)"},
		{"the target is temporarily unavailable: 503 Service Unavailable", "1С временно недоступен (HTTP 503)"},
		{"crm.activity.list: HTTP 429: \"QUERY_LIMIT_EXCEEDED\": \"Too many requests\"", "1С просит подождать: слишком много запросов (HTTP 429)"},
		{"unexpected status 404 from the service", "1С отклонил запрос (HTTP 404)"},
		{`Post "https://1c.example/hs": context deadline exceeded`, "1С не ответил вовремя"},
		{"dial tcp [::1]:1: connect: connection refused", "1С недоступен: соединение не установлено"},
		{"something else went wrong", "1С ответил ошибкой"},
		{"", ""},
	} {
		if got := targetErrorText(l, "1С", tc.raw); got != tc.want {
			t.Errorf("targetErrorText(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
