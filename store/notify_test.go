package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// testNotifier tells accountants of every approval waiting, on both
// channels.
func testNotifier() *store.Notifier {
	return &store.Notifier{
		Channels: []string{store.ChannelEmail, store.ChannelTelegram},
		Audits:   []string{"operation.awaiting_approval"},
		Event: func(audit string, op store.Operation, kind string) store.NoticeEvent {
			if audit == "operation.awaiting_approval" {
				return store.NoticeEvent{Event: "approval.waiting", Roles: []string{store.RoleAccountant}}
			}
			return store.NoticeEvent{}
		},
		Render: func(event string, op store.Operation, kind string) (store.NoticeText, error) {
			return store.NoticeText{Subject: event + " " + op.Key, Body: "waits", Link: "/admin/operations/" + op.Key}, nil
		},
	}
}

// person adds a user of role reachable at email and chat ("" for none).
func addPerson(t *testing.T, s *store.Store, name, role, email, chat string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateUser(ctx, name, role, "a-long-enough-password"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetContact(ctx, name, store.Contact{Email: email, Telegram: chat}); err != nil {
		t.Fatal(err)
	}
}

// An approval waiting writes, in its own batch, one notice per accountant
// and channel they gave: none to other roles, none to the disabled, none
// on a channel the person gave no address for.
func TestNoticesWrittenWithTheApproval(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		addPerson(t, s, "anna", store.RoleAccountant, "anna@firm.example", "1001")
		addPerson(t, s, "boris", store.RoleAccountant, "boris@firm.example", "")
		addPerson(t, s, "vera", store.RoleOperator, "vera@firm.example", "1003")
		addPerson(t, s, "gleb", store.RoleAccountant, "gleb@firm.example", "1004")
		if err := s.DisableUser(ctx, "gleb"); err != nil {
			t.Fatal(err)
		}
		s.SetNotifier(testNotifier())
		MustClaim(t, s, moneyReq("test:payment.charge:n-1:v1"), store.DecisionAwaitingApproval)
		// A replay of the same key is no new event.
		MustClaim(t, s, moneyReq("test:payment.charge:n-1:v1"), store.DecisionAwaitingApproval)

		ns, err := s.Notices(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, n := range ns {
			got[n.Recipient+" "+n.Channel+" "+n.Address]++
		}
		want := map[string]int{"anna email anna@firm.example": 1, "anna telegram 1001": 1, "boris email boris@firm.example": 1}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("notices %v, want %v", got, want)
		}
		select {
		case <-s.NoticesQueued():
		default:
			t.Error("the dispatcher was not woken")
		}
	})
}

// Fifty notices for one address within the window are one digest; a
// few are sent each alone; an address that had its share waits for the
// window, then gets the rest in one digest.
func TestNoticesDigest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		addPerson(t, s, "anna", store.RoleAccountant, "anna@firm.example", "")
		addPerson(t, s, "boris", store.RoleAccountant, "", "2002")
		n := testNotifier()
		n.Channels = []string{store.ChannelEmail}
		s.SetNotifier(n)
		for i := range 50 {
			MustClaim(t, s, moneyReq(fmt.Sprintf("test:payment.charge:d-%d:v1", i)), store.DecisionAwaitingApproval)
		}
		d := store.Digest{After: 10, Window: 10 * time.Minute}
		sends, err := s.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(sends) != 1 || len(sends[0].Notices) != 50 || !sends[0].IsDigest() {
			t.Fatalf("%d messages for fifty notices, want one digest of 50", len(sends))
		}
		if err := s.RecordNotices(ctx, []store.NoticeTry{{Send: sends[0], Sent: true}}); err != nil {
			t.Fatal(err)
		}

		// Nine more, within the window: each alone, the digest counting one.
		for i := range 9 {
			c.Advance(time.Second)
			MustClaim(t, s, moneyReq(fmt.Sprintf("test:payment.charge:e-%d:v1", i)), store.DecisionAwaitingApproval)
			sends, err := s.TakeNotices(ctx, d, 64, time.Minute)
			if err != nil || len(sends) != 1 || sends[0].IsDigest() {
				t.Fatalf("notice %d: %v, %v", i, sends, err)
			}
			if err := s.RecordNotices(ctx, []store.NoticeTry{{Send: sends[0], Sent: true}}); err != nil {
				t.Fatal(err)
			}
		}
		// The address had its ten: three more wait for the window.
		for i := range 3 {
			MustClaim(t, s, moneyReq(fmt.Sprintf("test:payment.charge:f-%d:v1", i)), store.DecisionAwaitingApproval)
		}
		if sends, err := s.TakeNotices(ctx, d, 64, time.Minute); err != nil || len(sends) != 0 {
			t.Fatalf("sent %v (%v) past the address's share of the window", sends, err)
		}
		// Once the digest leaves the window, nine messages are in it: the
		// three go as one.
		c.Advance(10*time.Minute - 9*time.Second)
		sends, err = s.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil || len(sends) != 1 || len(sends[0].Notices) != 3 {
			t.Fatalf("after the window: %v, %v; want one digest of 3", sends, err)
		}
	})
}

// A message that failed is tried again when its attempt said, and once
// sent is never taken again; a message given up is failed.
func TestNoticesRetried(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		addPerson(t, s, "anna", store.RoleAccountant, "anna@firm.example", "")
		s.SetNotifier(testNotifier())
		MustClaim(t, s, moneyReq("test:payment.charge:r-1:v1"), store.DecisionAwaitingApproval)
		d := store.Digest{After: 10, Window: time.Minute}
		sends, err := s.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil || len(sends) != 1 {
			t.Fatalf("%v, %v", sends, err)
		}
		// Leased: another dispatcher does not take it meanwhile.
		if again, _ := s.TakeNotices(ctx, d, 64, time.Minute); len(again) != 0 {
			t.Fatalf("a leased notice was taken twice: %v", again)
		}
		if err := s.RecordNotices(ctx, []store.NoticeTry{{Send: sends[0], Error: "the mail server did not answer", Next: c.Now().Add(30 * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.TakeNotices(ctx, d, 64, time.Minute); len(again) != 0 {
			t.Fatal("a failed notice was tried again before its time")
		}
		c.Advance(31 * time.Second)
		sends, err = s.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil || len(sends) != 1 {
			t.Fatalf("not tried again: %v, %v", sends, err)
		}
		if err := s.RecordNotices(ctx, []store.NoticeTry{{Send: sends[0], Sent: true}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Hour)
		if again, _ := s.TakeNotices(ctx, d, 64, time.Minute); len(again) != 0 {
			t.Fatal("a sent notice was taken again")
		}
		ns, _ := s.Notices(ctx, "anna", 10)
		if len(ns) != 1 || ns[0].State != store.NoticeSent || ns[0].Attempts != 2 || ns[0].LastError == "" {
			t.Fatalf("notice %+v", ns)
		}
		// Purged once older than the cutoff, a pending one never.
		MustClaim(t, s, moneyReq("test:payment.charge:r-2:v1"), store.DecisionAwaitingApproval)
		if n, err := s.PurgeNotices(ctx, c.Now().Add(-2*time.Hour), 100); err != nil || n != 0 {
			t.Fatalf("purged %d, %v before the cutoff", n, err)
		}
		c.Advance(48 * time.Hour)
		if n, err := s.PurgeNotices(ctx, c.Now().Add(-24*time.Hour), 100); err != nil || n != 1 {
			t.Fatalf("purged %d, %v; want the sent one", n, err)
		}
		if ns, _ := s.Notices(ctx, "", 10); len(ns) != 1 || ns[0].State != store.NoticePending {
			t.Fatalf("left %+v", ns)
		}
	})
}

// A contact that notices could not reach is refused, naming what is
// wrong; "-" clears one.
func TestContact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	addPerson(t, s, "anna", store.RoleAccountant, "anna@firm.example", "1001")
	for _, c := range []store.Contact{{Email: "anna"}, {Telegram: "@anna"}} {
		if err := s.SetContact(ctx, "anna", c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
	if err := s.SetContact(ctx, "anna", store.Contact{Telegram: "-"}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.ContactOf(ctx, "anna"); err != nil || c != (store.Contact{Email: "anna@firm.example"}) {
		t.Fatalf("contact %+v, %v", c, err)
	}
	if err := s.SetContact(ctx, "nobody", store.Contact{Email: "x@firm.example"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
}

// Two gateways on one journal count an address's messages one at a
// time: while one holds ten notices for anna, leased but not committed,
// the other, taking the eleventh, waits for it and then holds the
// eleventh back, not sending anna an eleventh message in the window.
func TestNoticesCountedAcrossGateways(t *testing.T) {
	t.Parallel()
	if os.Getenv("ONCEGATE_TEST_PG") == "" {
		t.Skip("needs PostgreSQL (ONCEGATE_TEST_PG): the embedded journal has one gateway")
	}
	ctx := context.Background()
	where := storetest.PostgreSQL.Location(t)
	open := func() *store.Store {
		s, err := store.Open(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		n := testNotifier()
		n.Channels = []string{store.ChannelEmail}
		s.SetNotifier(n)
		return s
	}
	g1, g2 := open(), open()
	addPerson(t, g1, "anna", store.RoleAccountant, "anna@firm.example", "")
	for i := range 10 {
		MustClaim(t, g1, moneyReq(fmt.Sprintf("test:payment.charge:g-%d:v1", i)), store.DecisionAwaitingApproval)
	}
	d := store.Digest{After: 10, Window: 10 * time.Minute}
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	g1.SetBeforeCommit(func() error {
		once.Do(func() { close(holding); <-release })
		return nil
	})
	first := make(chan []store.NoticeSend, 1)
	go func() {
		sends, err := g1.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil {
			t.Error(err)
		}
		first <- sends
	}()
	<-holding
	g1.SetBeforeCommit(nil)
	MustClaim(t, g2, moneyReq("test:payment.charge:g-10:v1"), store.DecisionAwaitingApproval)
	second := make(chan []store.NoticeSend, 1)
	go func() {
		sends, err := g2.TakeNotices(ctx, d, 64, time.Minute)
		if err != nil {
			t.Error(err)
		}
		second <- sends
	}()
	time.Sleep(300 * time.Millisecond) // the second gateway is at the address's lock by now
	close(release)
	if n := len(<-first); n != 10 {
		t.Fatalf("the first gateway took %d messages, want 10", n)
	}
	if sends := <-second; len(sends) != 0 {
		t.Fatalf("the second gateway sent %d more messages within the window, want none", len(sends))
	}
}
