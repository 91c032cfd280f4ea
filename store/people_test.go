package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A one-time code links the chat it comes from to its user, once, within
// its ten minutes; a newer code replaces an older one; the audit trail
// says it happened without the code or the chat.
func TestTelegramLink(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		addPerson(t, s, "anna", store.RoleAccountant, "", "")
		addPerson(t, s, "boris", store.RoleAccountant, "", "")
		old, _, err := s.NewTelegramLink(ctx, "anna")
		if err != nil {
			t.Fatal(err)
		}
		code, expires, err := s.NewTelegramLink(ctx, "anna")
		if err != nil || len(code) != 8 || expires.Sub(time.Now()) > store.TelegramLinkTTL+time.Minute {
			t.Fatalf("a code: %q %v %v", code, expires, err)
		}
		if _, err := s.LinkTelegram(ctx, old, "1001"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a replaced code: %v", err)
		}
		if _, err := s.LinkTelegram(ctx, code, "not-a-chat"); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("a chat that is no chat id: %v", err)
		}
		name, err := s.LinkTelegram(ctx, " "+strings.ToLower(code)+" ", "1001") // as a person may type it
		if err != nil || name != "anna" {
			t.Fatalf("the link: %q %v", name, err)
		}
		if c, _ := s.ContactOf(ctx, "anna"); c.Telegram != "1001" {
			t.Fatalf("anna's chat: %+v", c)
		}
		if _, err := s.LinkTelegram(ctx, code, "1002"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a spent code: %v", err)
		}
		// Past its ten minutes a code links nothing.
		late, _, _ := s.NewTelegramLink(ctx, "boris")
		s.Now = func() time.Time { return time.Now().Add(store.TelegramLinkTTL + time.Second) }
		if _, err := s.LinkTelegram(ctx, late, "1003"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an expired code: %v", err)
		}
		if c, _ := s.ContactOf(ctx, "boris"); c.Telegram != "" {
			t.Fatalf("boris linked by an expired code: %+v", c)
		}
		evs, err := s.AuditEvents(ctx, store.AuditFilter{Event: "user.telegram_linked"})
		if err != nil || len(evs) != 1 {
			t.Fatalf("audit: %v %v", evs, err)
		}
		if d := string(evs[0].Detail); strings.Contains(d, code) || strings.Contains(d, "1001") {
			t.Fatalf("the audit event holds the code or chat: %s", d)
		}
	})
}

// A person who turned a channel off is not told on it; on the others
// they are.
func TestNotifyOff(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		addPerson(t, s, "anna", store.RoleAccountant, "anna@firm.example", "1001")
		if err := s.SetNotifyOff(ctx, "anna", []string{"fax"}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("an unknown channel: %v", err)
		}
		if err := s.SetNotifyOff(ctx, "anna", []string{store.ChannelTelegram}); err != nil {
			t.Fatal(err)
		}
		if off, err := s.NotifyOff(ctx, "anna"); err != nil || fmt.Sprint(off) != "[telegram]" {
			t.Fatalf("off: %v %v", off, err)
		}
		s.SetNotifier(testNotifier())
		MustClaim(t, s, moneyReq("test:payment.charge:off-1:v1"), store.DecisionAwaitingApproval)
		ns, err := s.Notices(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) != 1 || ns[0].Channel != store.ChannelEmail {
			t.Fatalf("notices %+v, want one e-mail", ns)
		}
	})
}
