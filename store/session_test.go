package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"github.com/oncegate/oncegate/store/storetest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// MustCreateSession signs in u for ttl and returns the browser's id.
func MustCreateSession(tb testing.TB, s *store.Store, u store.User, ttl time.Duration) string {
	tb.Helper()
	id, _, err := s.CreateSession(context.Background(), u.ID, ttl, "192.0.2.1")
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func TestSessions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("OK", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			id, sess, err := s.CreateSession(ctx, u.ID, 12*time.Hour, "192.0.2.1")
			if err != nil {
				t.Fatal(err)
			}
			if len(id) != 43 || len(sess.CSRF) != 43 || id == sess.CSRF {
				t.Fatalf("id %q, csrf %q", id, sess.CSRF)
			}
			if !sess.ExpiresAt.Equal(clock.Now().Add(12 * time.Hour)) {
				t.Fatalf("expires %v", sess.ExpiresAt)
			}
			got, err := s.SessionByID(ctx, id, 30*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !sameUser(got.User, u) || got.CSRF != sess.CSRF || !got.ExpiresAt.Equal(sess.ExpiresAt) {
				t.Fatalf("found %+v, want %+v", got, sess)
			}
			if !got.CheckCSRF(sess.CSRF) || got.CheckCSRF(sess.CSRF[1:]) || got.CheckCSRF("") {
				t.Fatal("CheckCSRF")
			}
			for _, wrong := range []string{"", id[1:], id + "x", strings.Repeat("a", 1000)} {
				if _, err := s.SessionByID(ctx, wrong, 0); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("SessionByID(%q) = %v, want ErrNotFound", wrong, err)
				}
			}
			// A new role shows at the next lookup.
			if err := s.SetRole(ctx, "alice", store.RoleAuditor); err != nil {
				t.Fatal(err)
			}
			if got, err := s.SessionByID(ctx, id, 0); err != nil || got.User.Role != store.RoleAuditor {
				t.Fatalf("after SetRole: %+v, %v", got, err)
			}
		})
		t.Run("IDNotStored", func(t *testing.T) {
			s := j.Open(t)
			id := MustCreateSession(t, s, MustCreateUser(t, s, "alice", store.RoleAccountant), time.Hour)
			var idHash, row string
			err := openRawJournal(t, s).QueryRow(`
			SELECT id_hash, id_hash || user_id || csrf_token || created_at || expires_at || last_seen_at || remote_addr
			FROM sessions`).Scan(&idHash, &row)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(id))
			if got, want := idHash, hex.EncodeToString(sum[:]); got != want {
				t.Fatalf("id_hash = %q, want %q", got, want)
			}
			if strings.Contains(row, id) {
				t.Fatalf("the session id is stored: %q", row)
			}
		})
		t.Run("ErrCreate", func(t *testing.T) {
			s := j.Open(t)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			if _, _, err := s.CreateSession(ctx, u.ID+1, time.Hour, ""); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("unknown user: %v, want ErrNotFound", err)
			}
			if _, _, err := s.CreateSession(ctx, u.ID, 0, ""); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("zero ttl: %v, want ErrInvalid", err)
			}
			if err := s.DisableUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.CreateSession(ctx, u.ID, time.Hour, ""); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("disabled user: %v, want ErrNotFound", err)
			}
		})
		t.Run("AbsoluteExpiry", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			id := MustCreateSession(t, s, MustCreateUser(t, s, "alice", store.RoleAccountant), time.Hour)
			clock.Advance(time.Hour - time.Second)
			if _, err := s.SessionByID(ctx, id, 0); err != nil {
				t.Fatalf("before expiry: %v", err)
			}
			clock.Advance(time.Second)
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("at expiry: %v, want ErrNotFound", err)
			}
		})
		t.Run("IdleExpiry", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			id := MustCreateSession(t, s, MustCreateUser(t, s, "alice", store.RoleAccountant), 12*time.Hour)
			raw := openRawJournal(t, s)
			lastSeen := func() string {
				t.Helper()
				var at string
				if err := raw.QueryRow(`SELECT last_seen_at FROM sessions`).Scan(&at); err != nil {
					t.Fatal(err)
				}
				return at
			}
			const idle = 30 * time.Minute
			created := lastSeen()
			clock.Advance(30 * time.Second)
			if _, err := s.SessionByID(ctx, id, idle); err != nil {
				t.Fatal(err)
			}
			if got := lastSeen(); got != created {
				t.Fatalf("last_seen_at written %s after 30s, want no write within a minute", got)
			}
			// Use keeps it alive past idle in total.
			for range 3 {
				clock.Advance(20 * time.Minute)
				if _, err := s.SessionByID(ctx, id, idle); err != nil {
					t.Fatalf("in use: %v", err)
				}
			}
			if got := lastSeen(); got == created {
				t.Fatal("last_seen_at never refreshed")
			}
			clock.Advance(idle + time.Second)
			if _, err := s.SessionByID(ctx, id, idle); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("idle: %v, want ErrNotFound", err)
			}
			// Gone for good, not only under this idle limit.
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("idle, then no limit: %v, want ErrNotFound", err)
			}
		})
		t.Run("DisabledUser", func(t *testing.T) {
			s := j.Open(t)
			id := MustCreateSession(t, s, MustCreateUser(t, s, "alice", store.RoleAccountant), time.Hour)
			if err := s.DisableUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("disabled user's session: %v, want ErrNotFound", err)
			}
			var n int
			if err := openRawJournal(t, s).QueryRow(`SELECT count(*) FROM sessions`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d sessions left, %v", n, err)
			}
			// Enabling again does not bring the session back.
			if err := s.EnableUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("re-enabled user's old session: %v, want ErrNotFound", err)
			}
		})
		t.Run("Delete", func(t *testing.T) {
			s := j.Open(t)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			id, other := MustCreateSession(t, s, u, time.Hour), MustCreateSession(t, s, u, time.Hour)
			if err := s.DeleteSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted session: %v, want ErrNotFound", err)
			}
			if err := s.DeleteSession(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second delete: %v, want ErrNotFound", err)
			}
			if _, err := s.SessionByID(ctx, other, 0); err != nil {
				t.Fatalf("the user's other session: %v", err)
			}
		})
		t.Run("Purge", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			MustCreateSession(t, s, u, time.Hour)
			MustCreateSession(t, s, u, time.Hour)
			live := MustCreateSession(t, s, u, 3*time.Hour)
			if n, err := s.PurgeSessions(ctx); err != nil || n != 0 {
				t.Fatalf("purge before expiry = %d, %v", n, err)
			}
			clock.Advance(2 * time.Hour)
			if n, err := s.PurgeSessions(ctx); err != nil || n != 2 {
				t.Fatalf("purge = %d, %v; want 2", n, err)
			}
			if _, err := s.SessionByID(ctx, live, 0); err != nil {
				t.Fatalf("live session purged: %v", err)
			}
		})
	})
}
