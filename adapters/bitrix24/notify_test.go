package bitrix24_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// Notify finds the portal's user by e-mail and sends them the portal's
// own notification; a portal with no such user sends nothing and says so.
func TestNotify(t *testing.T) {
	t.Parallel()
	_, c, base := setup(t)
	simURL := base[:strings.Index(base, "/bitrix24/")]
	resp, err := http.Post(simURL+"/_sim/bitrix24/users", "application/json", strings.NewReader(`{"email": "anna@firm.example"}`))
	if err != nil {
		t.Fatal(err)
	}
	var added struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&added)
	resp.Body.Close()

	ctx := context.Background()
	// Sent twice under one tag (an answer lost): one notification.
	for range 2 {
		if err := c.Notify(ctx, "ANNA@firm.example", "Ждёт вашего решения", "oncegate-1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Notify(ctx, "boris@firm.example", "Ждёт вашего решения", "oncegate-2"); err == nil || !strings.Contains(err.Error(), "no active user") {
		t.Fatalf("a person the portal does not know: %v", err)
	}
	resp, err = http.Get(simURL + "/_sim/bitrix24/notifications")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Notifications []sim.Bitrix24Notification }
	json.NewDecoder(resp.Body).Decode(&got)
	if len(got.Notifications) != 1 || got.Notifications[0].UserID != added.ID || got.Notifications[0].Message != "Ждёт вашего решения" || got.Notifications[0].Tag != "oncegate-1" {
		t.Fatalf("notifications %+v (user %s)", got.Notifications, added.ID)
	}
}
