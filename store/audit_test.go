package store_test

import (
	"context"
	"encoding/json"
	"github.com/oncegate/oncegate/store/storetest"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("TransitionsAreEvents", func(t *testing.T) {
			s := j.Open(t)
			const key = "test:invoice.create:a-1:v1"
			actx := store.WithActor(ctx, store.Actor{Kind: store.ActorAgent, Name: "agent-a"})
			if _, _, err := s.Claim(actx, claimReq(key, fp1, "run-1")); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordAttempt(ctx, key, "run-1", 2, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, key, "run-1", "INV-1", nil); err != nil {
				t.Fatal(err)
			}
			events, err := s.AuditEvents(ctx, store.AuditFilter{OperationKey: key})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range events {
				names = append([]string{e.Event}, names...)
			}
			if got, want := len(names), 3; got != want {
				t.Fatalf("events %v", names)
			}
			if names[0] != "operation.started" || names[1] != "operation.attempt" || names[2] != "operation.succeeded" {
				t.Fatalf("events %v", names)
			}
			if a := events[2].Actor; a.Kind != store.ActorAgent || a.Name != "agent-a" {
				t.Fatalf("claim audited as %+v", a)
			}
			if a := events[0].Actor; a.Kind != store.ActorSystem {
				t.Fatalf("completion audited as %+v", a)
			}
			r, err := s.VerifyAudit(ctx)
			if err != nil || r.BrokenAt != 0 || r.Events != 3 {
				t.Fatalf("verify = %+v, %v", r, err)
			}
		})
		t.Run("TamperDetected", func(t *testing.T) {
			s := j.Open(t)
			for i := range 5 {
				if err := s.Audit(ctx, "note", "", map[string]any{"n": i}); err != nil {
					t.Fatal(err)
				}
			}
			db := store.RawDB(t, s)
			if _, err := db.Exec(`UPDATE audit_events SET detail = '{"n":99}' WHERE id = 3`); err != nil {
				t.Fatal(err)
			}
			r, err := s.VerifyAudit(ctx)
			if err != nil || r.BrokenAt != 3 {
				t.Fatalf("after an edit of event 3: %+v, %v", r, err)
			}
			if _, err := db.Exec(`UPDATE audit_events SET detail = '{"n":2}' WHERE id = 3`); err != nil {
				t.Fatal(err)
			}
			if r, _ := s.VerifyAudit(ctx); r.BrokenAt != 0 {
				t.Fatalf("restored chain still broken: %+v", r)
			}
			if _, err := db.Exec(`DELETE FROM audit_events WHERE id = 4`); err != nil {
				t.Fatal(err)
			}
			if r, _ := s.VerifyAudit(ctx); r.BrokenAt != 5 {
				t.Fatalf("after a deletion: %+v, want broken at 5", r)
			}
		})
		t.Run("ManyInOneBatch", func(t *testing.T) {
			// A batch's events go in with multi-row INSERTs of 64, 32, … rows
			// (SQLite) or in one call to the server (PostgreSQL): every count
			// chains in order, with no id skipped or repeated.
			s := j.Open(t)
			total := 0
			for _, n := range []int{1, 3, 64, 100, 255} {
				if err := store.AuditInOneWrite(ctx, s, n); err != nil {
					t.Fatalf("%d events: %v", n, err)
				}
				total += n
			}
			r, err := s.VerifyAudit(ctx)
			if err != nil || r.BrokenAt != 0 || r.Events != total {
				t.Fatalf("verify = %+v, %v; want %d events, unbroken", r, err, total)
			}
			evs, err := s.AuditEvents(ctx, store.AuditFilter{Limit: 500})
			if err != nil || len(evs) != total {
				t.Fatalf("%d events, %v", len(evs), err)
			}
			// Newest first: the last write's events, its last one first.
			for i, e := range evs[:255] {
				var d struct{ N int }
				if json.Unmarshal(e.Detail, &d); e.ID != int64(total-i) || d.N != 254-i {
					t.Fatalf("event %d: id %d, n %d", i, e.ID, d.N)
				}
			}
		})
		t.Run("HashCoversEveryByte", func(t *testing.T) {
			// The chain's hashes are computed where the events are written (on
			// PostgreSQL by the server) and checked by the gateway: both must
			// hash the same bytes for text JSON escapes, outside ASCII and
			// with no operation key.
			s := j.Open(t)
			actx := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "Бухгалтер <главный> & Co"})
			details := []map[string]any{
				{"note": "Счёт № 17 «ООО Ромашка»", "sum": 1234.5},
				{"html": "<script>&amp;</script>", "sep": "\u2028 \u2029", "emoji": "😀", "quote": `"'\\`},
				{"nested": map[string]any{"b": []any{1, "два", nil, true}, "a": "\x00\x1f"}},
			}
			keys := []string{"", "ключ:Заказ-1", "test:invoice.create:a-1:v1"}
			for i, d := range details {
				if err := s.Audit(actx, "note.добавлена", keys[i], d); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.VerifyAudit(ctx)
			if err != nil || r.BrokenAt != 0 || r.Events != len(details) {
				t.Fatalf("verify = %+v, %v", r, err)
			}
			var nullKeys int
			if err := store.RawDB(t, s).QueryRow(`SELECT count(*) FROM audit_events WHERE operation_key IS NULL`).Scan(&nullKeys); err != nil || nullKeys != 1 {
				t.Fatalf("events without a key stored as NULL: %d, %v", nullKeys, err)
			}
		})
		t.Run("ChainCarriesOverTheUpgrade", func(t *testing.T) {
			// A journal whose events the gateway chained (before migration
			// 0012; on SQLite, always) goes on with events the server chains,
			// and the other way round: one chain, each event after its
			// predecessor.
			s := j.Open(t)
			for range 2 {
				if err := store.AuditChainedByGateway(ctx, s, 3); err != nil {
					t.Fatal(err)
				}
				if err := store.AuditInOneWrite(ctx, s, 3); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.VerifyAudit(ctx)
			if err != nil || r.BrokenAt != 0 || r.Events != 12 {
				t.Fatalf("verify = %+v, %v", r, err)
			}
		})
		t.Run("Filter", func(t *testing.T) {
			s := j.Open(t)
			for _, ev := range []string{"approval.approved", "approval.denied", "user.login", "approval.approved"} {
				if err := s.Audit(ctx, ev, "", map[string]any{"secret": false}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.AuditEvents(ctx, store.AuditFilter{Event: "approval."})
			if err != nil || len(got) != 3 {
				t.Fatalf("prefix filter: %d events, %v", len(got), err)
			}
			page, err := s.AuditEvents(ctx, store.AuditFilter{BeforeID: got[0].ID, Limit: 2})
			if err != nil || len(page) != 2 || page[0].ID != got[0].ID-1 {
				t.Fatalf("keyset page = %+v, %v", page, err)
			}
			var d map[string]any
			if err := json.Unmarshal(got[0].Detail, &d); err != nil || d["secret"] != false {
				t.Fatalf("detail %s", got[0].Detail)
			}
		})
	})
}
