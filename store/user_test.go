package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/oncegate/oncegate/store/storetest"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/oncegate/oncegate/store"
)

const testPassword = "correct horse battery"

// MustCreateUser adds a user with testPassword.
func MustCreateUser(tb testing.TB, s *store.Store, name, role string) store.User {
	tb.Helper()
	u, err := s.CreateUser(context.Background(), name, role, testPassword)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// openRawJournal opens the store's file directly, to see what is stored.
func openRawJournal(tb testing.TB, s *store.Store) store.Raw {
	tb.Helper()
	return store.RawDB(tb, s)
}

func storedHash(tb testing.TB, s *store.Store, name string) string {
	tb.Helper()
	var h string
	if err := openRawJournal(tb, s).QueryRow(`SELECT password_hash FROM users WHERE name = ?`, name).Scan(&h); err != nil {
		tb.Fatal(err)
	}
	return h
}

// sameUser compares users, times by instant.
func sameUser(a, b store.User) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Role == b.Role && a.Disabled == b.Disabled &&
		a.CreatedAt.Equal(b.CreatedAt) && a.PasswordChangedAt.Equal(b.PasswordChangedAt)
}

func TestUsers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("OK", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			if u.ID == 0 || u.Name != "alice" || u.Role != store.RoleAccountant || u.Disabled || !u.CreatedAt.Equal(clock.Now()) {
				t.Fatalf("created %+v", u)
			}
			got, err := s.Authenticate(ctx, "alice", testPassword)
			if err != nil {
				t.Fatal(err)
			}
			if !sameUser(got, u) {
				t.Fatalf("authenticated %+v, want %+v", got, u)
			}
			// Names compare without letter case; the stored spelling is answered.
			if got, err := s.Authenticate(ctx, "ALICE", testPassword); err != nil || got.Name != "alice" {
				t.Fatalf("authenticate ALICE = %+v, %v", got, err)
			}
			if got, err := s.UserByID(ctx, u.ID); err != nil || !sameUser(got, u) {
				t.Fatalf("UserByID = %+v, %v", got, err)
			}
			if _, err := s.UserByID(ctx, u.ID+1); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("UserByID(unknown) = %v, want ErrNotFound", err)
			}
			// Twelve characters are enough even when they take more bytes.
			if _, err := s.CreateUser(ctx, "boris@example.org", store.RoleAuditor, "пароль-длинн"); err != nil {
				t.Fatal(err)
			}
			list, err := s.Users(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(list), 2; got != want {
				t.Fatalf("%d users, want %d", got, want)
			}
			if n, err := s.CountUsers(ctx); err != nil || n != 2 {
				t.Fatalf("CountUsers = %d, %v", n, err)
			}
		})
		t.Run("ErrBadCredentials", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			MustCreateUser(t, s, "bob", store.RoleOperator)
			if err := s.DisableUser(ctx, "bob"); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ name, password string }{
				{"alice", testPassword + "x"},
				{"alice", ""},
				{"alice", strings.Repeat("x", store.MaxPasswordBytes+1)},
				{"carol", testPassword},
				{"bob", testPassword},
			} {
				_, err := s.Authenticate(ctx, c.name, c.password)
				if !errors.Is(err, store.ErrBadCredentials) || !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Authenticate(%q, %q) = %v, want ErrBadCredentials", c.name, c.password, err)
				}
			}
		})
		t.Run("ErrConflict", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			for _, name := range []string{"alice", "Alice", "ALICE"} {
				if _, err := s.CreateUser(ctx, name, store.RoleAuditor, testPassword); !errors.Is(err, store.ErrConflict) {
					t.Errorf("CreateUser(%q) = %v, want ErrConflict", name, err)
				}
			}
		})
		t.Run("ErrInvalid", func(t *testing.T) {
			s := j.Open(t)
			for _, c := range []struct{ name, role, password, msg string }{
				{"alice", "root", testPassword, "unknown role"},
				{"alice", "", testPassword, "unknown role"},
				{"", store.RoleAdmin, testPassword, "user name"},
				{"-alice", store.RoleAdmin, testPassword, "user name"},
				{"al ice", store.RoleAdmin, testPassword, "user name"},
				{"alicé", store.RoleAdmin, testPassword, "user name"},
				{strings.Repeat("a", 65), store.RoleAdmin, testPassword, "user name"},
				{"alice", store.RoleAdmin, "short-pass1", "at least 12"},
				{"alice", store.RoleAdmin, strings.Repeat("x", store.MaxPasswordBytes+1), "at most"},
			} {
				_, err := s.CreateUser(ctx, c.name, c.role, c.password)
				if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("CreateUser(%q, %q, %d-byte password) = %v, want ErrInvalid saying %q", c.name, c.role, len(c.password), err, c.msg)
				}
			}
			if n, err := s.CountUsers(ctx); err != nil || n != 0 {
				t.Fatalf("CountUsers = %d, %v", n, err)
			}
			if err := s.SetPassword(ctx, "alice", "short"); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("SetPassword(short) = %v, want ErrInvalid", err)
			}
		})
		t.Run("StoredHash", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			MustCreateUser(t, s, "bob", store.RoleAccountant)
			h := storedHash(t, s, "alice")
			parts := strings.Split(h, "$")
			if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" || !strings.HasPrefix(parts[3], "m=") {
				t.Fatalf("stored hash %q is not a PHC argon2id string", h)
			}
			if strings.Contains(h, testPassword) {
				t.Fatalf("stored hash %q holds the password", h)
			}
			if h == storedHash(t, s, "bob") {
				t.Fatal("one password hashed alike for two users: no salt")
			}
		})
		t.Run("SetPassword", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			id, _, err := s.CreateSession(ctx, u.ID, time.Hour, "")
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			const newPassword = "a whole new passphrase"
			if err := s.SetPassword(ctx, "Alice", newPassword); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Authenticate(ctx, "alice", testPassword); !errors.Is(err, store.ErrBadCredentials) {
				t.Fatalf("old password: %v, want ErrBadCredentials", err)
			}
			got, err := s.Authenticate(ctx, "alice", newPassword)
			if err != nil {
				t.Fatal(err)
			}
			if !got.PasswordChangedAt.Equal(clock.Now()) || !got.CreatedAt.Equal(u.CreatedAt) {
				t.Fatalf("after SetPassword %+v", got)
			}
			if _, err := s.SessionByID(ctx, id, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("session after password change: %v, want ErrNotFound", err)
			}
			if err := s.SetPassword(ctx, "carol", newPassword); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("SetPassword(unknown) = %v, want ErrNotFound", err)
			}
		})
		t.Run("ChooseOwnPassword", func(t *testing.T) {
			s := j.Open(t)
			clock := pinClock(s)
			// Made by someone else: the user must choose their own password.
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			if !u.MustChangePassword {
				t.Fatal("a new user need not choose their own password")
			}
			id, sess, err := s.CreateSession(ctx, u.ID, time.Hour, "")
			if err != nil {
				t.Fatal(err)
			}
			if !sess.User.MustChangePassword {
				t.Fatal("the session does not say the password must change")
			}
			// Another browser, signed in with the password someone else chose.
			other, _, err := s.CreateSession(ctx, u.ID, time.Hour, "")
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			const own = "only alice knows this one"
			me := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "alice"})
			if err := s.ChangeOwnPassword(me, "ALICE", own, "192.0.2.7"); err != nil {
				t.Fatal(err)
			}
			got, err := s.Authenticate(ctx, "alice", own)
			if err != nil {
				t.Fatal(err)
			}
			if got.MustChangePassword || !got.PasswordChangedAt.Equal(clock.Now()) {
				t.Fatalf("after ChangeOwnPassword %+v", got)
			}
			for _, sid := range []string{id, other} {
				if _, err := s.SessionByID(ctx, sid, 0); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("a session of the old password: %v, want ErrNotFound", err)
				}
			}
			evs, err := s.AuditEvents(ctx, store.AuditFilter{Event: "user.password_changed"})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Actor != (store.Actor{Kind: store.ActorUser, Name: "alice"}) ||
				string(evs[0].Detail) != `{"addr":"192.0.2.7","name":"alice","self":true,"was_required":true}` {
				t.Fatalf("audit of the change: %+v", evs)
			}
			if strings.Contains(string(evs[0].Detail), own) {
				t.Fatal("the password is in the audit trail")
			}

			// A reset by someone else: again the user must choose.
			if err := s.SetPassword(ctx, "alice", "an admin chose this one"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.UserByID(ctx, u.ID); err != nil || !got.MustChangePassword {
				t.Fatalf("after a reset: %+v, %v", got, err)
			}
			if err := s.ChangeOwnPassword(ctx, "alice", "short", ""); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("ChangeOwnPassword(short) = %v, want ErrInvalid", err)
			}
			if err := s.ChangeOwnPassword(ctx, "carol", own, ""); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ChangeOwnPassword(unknown) = %v, want ErrNotFound", err)
			}
		})
		// Users of a journal from before version 7 got their passwords from
		// someone else too: after the upgrade each chooses their own.
		t.Run("UpgradeMustChoose", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			if err := s.ChangeOwnPassword(ctx, "alice", "only alice knows this one", ""); err != nil {
				t.Fatal(err)
			}
			location := store.LocationOf(s)
			s.Close()
			// Down to version 6, below the version that added the column
			// (7), however many versions came after, and up again.
			for v := store.LatestVersion(); v > 6; v-- {
				if _, err := store.Migrate(ctx, location, "down"); err != nil {
					t.Fatalf("migrate down from %d: %v", v, err)
				}
			}
			if _, err := store.Migrate(ctx, location, "up"); err != nil {
				t.Fatalf("migrate up: %v", err)
			}
			s2, err := store.Open(ctx, location)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			users, err := s2.Users(ctx)
			if err != nil || len(users) != 1 || !users[0].MustChangePassword {
				t.Fatalf("after the upgrade: %+v, %v; want alice to choose her own password", users, err)
			}
		})
		t.Run("DisableEnable", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			if err := s.DisableUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if err := s.DisableUser(ctx, "alice"); err != nil {
				t.Fatalf("second disable: %v", err)
			}
			list, err := s.Users(ctx)
			if err != nil || len(list) != 1 || !list[0].Disabled {
				t.Fatalf("users = %+v, %v", list, err)
			}
			if err := s.EnableUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Authenticate(ctx, "alice", testPassword); err != nil {
				t.Fatalf("enabled again: %v", err)
			}
			for _, err := range []error{s.DisableUser(ctx, "carol"), s.EnableUser(ctx, "carol"), s.SetRole(ctx, "carol", store.RoleAdmin)} {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("unknown user: %v, want ErrNotFound", err)
				}
			}
		})
		t.Run("SetRole", func(t *testing.T) {
			s := j.Open(t)
			u := MustCreateUser(t, s, "alice", store.RoleAccountant)
			if err := s.SetRole(ctx, "alice", store.RoleOperator); err != nil {
				t.Fatal(err)
			}
			if got, err := s.UserByID(ctx, u.ID); err != nil || got.Role != store.RoleOperator {
				t.Fatalf("after SetRole: %+v, %v", got, err)
			}
			if err := s.SetRole(ctx, "alice", "root"); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("SetRole(root) = %v, want ErrInvalid", err)
			}
		})
		t.Run("ErrLastAdmin", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "root", store.RoleAdmin)
			if err := s.DisableUser(ctx, "root"); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("disable the last admin: %v, want ErrInvalid", err)
			}
			if err := s.SetRole(ctx, "root", store.RoleAuditor); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("demote the last admin: %v, want ErrInvalid", err)
			}
			MustCreateUser(t, s, "root2", store.RoleAdmin)
			if err := s.DisableUser(ctx, "root"); err != nil {
				t.Fatalf("disable one of two admins: %v", err)
			}
			if err := s.SetRole(ctx, "root2", store.RoleAuditor); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("demote the last enabled admin: %v, want ErrInvalid", err)
			}
		})
		t.Run("ErrDamagedHash", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			raw := openRawJournal(t, s)
			for _, h := range []string{
				"$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5", // 4 GiB
				"$argon2id$v=19$m=1024,t=1,p=1x$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
				"$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHRzYWx0",
			} {
				if _, err := raw.Exec(`UPDATE users SET password_hash = ? WHERE name = 'alice'`, h); err != nil {
					t.Fatal(err)
				}
				_, err := s.Authenticate(ctx, "alice", testPassword)
				if err == nil || errors.Is(err, store.ErrBadCredentials) {
					t.Errorf("hash %q: %v, want an internal error", h, err)
				}
			}
		})
		t.Run("Rehash", func(t *testing.T) {
			s := j.Open(t)
			MustCreateUser(t, s, "alice", store.RoleAccountant)
			current := storedHash(t, s, "alice")
			// A hash made with production cost, as an older binary would have.
			old := store.HashPasswordWith(testPassword, 64*1024, 3, 2)
			if !strings.HasPrefix(old, "$argon2id$v=19$m=65536,t=3,p=2$") {
				t.Fatalf("hash %q", old)
			}
			if _, err := openRawJournal(t, s).Exec(`UPDATE users SET password_hash = ? WHERE name = 'alice'`, old); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Authenticate(ctx, "alice", testPassword); err != nil {
				t.Fatalf("authenticate against an older hash: %v", err)
			}
			h := storedHash(t, s, "alice")
			if h == old || strings.Split(h, "$")[3] != strings.Split(current, "$")[3] {
				t.Fatalf("hash %q not replaced with current parameters (like %q)", h, current)
			}
			if _, err := s.Authenticate(ctx, "alice", testPassword); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// A password hash's memory (64 MiB at production cost) goes back to the
// system when the hash is done, so a server that made its first admin or
// signed someone in idles at its usual size. Not parallel: it reads the
// process's own memory.
func TestHashGivesItsMemoryBack(t *testing.T) {
	held := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64() - s[1].Value.Uint64()
	}
	before := held()
	store.HashPasswordWith("correct horse battery staple", 64*1024, 1, 1)
	if after := held(); after > before+16<<20 {
		t.Fatalf("the process holds %d MiB after a 64 MiB hash, %d MiB before: the hash's memory was not given back", after>>20, before>>20)
	}
}

// as is ctx with the person name acting, as the admin UI sets it.
func as(ctx context.Context, name string) context.Context {
	return store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: name})
}

// roleEvents are the user.role_changed events, newest first, decoded.
func roleEvents(tb testing.TB, s *store.Store) []map[string]any {
	tb.Helper()
	evs, err := s.AuditEvents(context.Background(), store.AuditFilter{Event: "user.role_changed"})
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		var d map[string]any
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			tb.Fatal(err)
		}
		d["actor"] = e.Actor.Name
		out = append(out, d)
	}
	return out
}

// No one approves money by promoting themselves: a person cannot change
// their own role, nor grant the role that decides money without their
// password typed again; the grantee signs in anew.
func TestUserRoles(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		setup := func(t *testing.T) (*store.Store, store.User) {
			s := j.Open(t)
			MustCreateUser(t, s, "root", store.RoleAdmin)
			MustCreateUser(t, s, "root2", store.RoleAdmin) // so root is not the last admin
			return s, MustCreateUser(t, s, "olga", store.RoleOperator)
		}
		roleOf := func(t *testing.T, s *store.Store, id int64) string {
			u, err := s.UserByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return u.Role
		}

		t.Run("ErrOwnRole", func(t *testing.T) {
			s, _ := setup(t)
			users, _ := s.Users(ctx)
			root := users[0]
			for _, name := range []string{"root", "ROOT"} {
				if err := s.SetRole(as(ctx, "root"), name, store.RoleOperator); !errors.Is(err, store.ErrInvalid) {
					t.Fatalf("SetRole of one's own (%s) = %v, want ErrInvalid", name, err)
				}
			}
			if got, want := roleOf(t, s, root.ID), store.RoleAdmin; got != want {
				t.Fatalf("role = %s, want %s", got, want)
			}
			if evs := roleEvents(t, s); len(evs) != 0 {
				t.Fatalf("audited %v", evs)
			}
		})
		t.Run("ErrConfirmRequired", func(t *testing.T) {
			s, olga := setup(t)
			if err := s.SetRole(as(ctx, "root"), "olga", store.RoleAccountant); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("a person's grant without the password = %v, want ErrInvalid", err)
			}
			if got, want := roleOf(t, s, olga.ID), store.RoleOperator; got != want {
				t.Fatalf("role = %s, want %s", got, want)
			}
			// A role that decides no money needs no password.
			if err := s.SetRole(as(ctx, "root"), "olga", store.RoleAuditor); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("EndsSessions", func(t *testing.T) {
			s, olga := setup(t)
			users, _ := s.Users(ctx)
			sess, other := MustCreateSession(t, s, olga, time.Hour), MustCreateSession(t, s, users[0], time.Hour)
			// The command line (a system actor) grants without a password.
			if err := s.SetRole(ctx, "olga", store.RoleAccountant); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionByID(ctx, sess, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the grantee's session after the grant: %v, want ErrNotFound", err)
			}
			if _, err := s.SessionByID(ctx, other, 0); err != nil {
				t.Fatalf("another user's session after the grant: %v", err)
			}
			evs := roleEvents(t, s)
			if len(evs) != 1 || evs[0]["sessions_ended"] != float64(1) || evs[0]["password_confirmed"] != false {
				t.Fatalf("audited %v", evs)
			}
			// Leaving the role, or keeping it, ends no session.
			sess = MustCreateSession(t, s, olga, time.Hour)
			for _, role := range []string{store.RoleAccountant, store.RoleOperator} {
				if err := s.SetRole(ctx, "olga", role); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.SessionByID(ctx, sess, 0); err != nil {
				t.Fatalf("session after leaving the role: %v", err)
			}
		})
		t.Run("Confirmed", func(t *testing.T) {
			s, olga := setup(t)
			root := as(ctx, "root")
			for _, tc := range []struct {
				password string
				want     error
			}{{"", store.ErrConfirmRequired}, {"not the password", store.ErrBadCredentials}} {
				if _, _, err := s.ConfirmPassword(root, tc.password, "192.0.2.7"); !errors.Is(err, tc.want) {
					t.Fatalf("ConfirmPassword(%q) = %v, want %v", tc.password, err, tc.want)
				}
			}
			if _, _, err := s.ConfirmPassword(ctx, testPassword, "192.0.2.7"); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("ConfirmPassword by no person = %v, want ErrInvalid", err)
			}
			conf, _, err := s.ConfirmPassword(root, testPassword, "192.0.2.7")
			if err != nil {
				t.Fatal(err)
			}
			// A confirmation is its person's only.
			if err := s.SetRoleConfirmed(as(ctx, "root2"), "olga", store.RoleAccountant, conf); !errors.Is(err, store.ErrConfirmRequired) {
				t.Fatalf("another person's confirmation = %v, want ErrConfirmRequired", err)
			}
			if err := s.SetRoleConfirmed(root, "root", store.RoleAccountant, conf); !errors.Is(err, store.ErrOwnRole) {
				t.Fatalf("one's own role, confirmed = %v, want ErrOwnRole", err)
			}
			sess := MustCreateSession(t, s, olga, time.Hour)
			if err := s.SetRoleConfirmed(root, "olga", store.RoleAccountant, conf); err != nil {
				t.Fatal(err)
			}
			if got, want := roleOf(t, s, olga.ID), store.RoleAccountant; got != want {
				t.Fatalf("role = %s, want %s", got, want)
			}
			if _, err := s.SessionByID(ctx, sess, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the grantee's session after the grant: %v, want ErrNotFound", err)
			}
			evs := roleEvents(t, s)
			want := map[string]any{"actor": "root", "name": "olga", "from": store.RoleOperator, "role": store.RoleAccountant,
				"password_confirmed": true, "addr": "192.0.2.7", "sessions_ended": float64(1)}
			if len(evs) != 1 || len(evs[0]) != len(want) {
				t.Fatalf("audited %v, want %v", evs, want)
			}
			for k, v := range want {
				if got := evs[0][k]; got != v {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
		})
		t.Run("CreateConfirmed", func(t *testing.T) {
			s, _ := setup(t)
			root := as(ctx, "root")
			if _, err := s.CreateUser(root, "anna", store.RoleAccountant, testPassword); !errors.Is(err, store.ErrConfirmRequired) {
				t.Fatalf("a person adds an accountant without the password: %v, want ErrConfirmRequired", err)
			}
			if _, err := s.CreateUser(root, "oleg", store.RoleOperator, testPassword); err != nil {
				t.Fatalf("an operator needs no password: %v", err)
			}
			conf, _, err := s.ConfirmPassword(root, testPassword, "192.0.2.7")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateUserConfirmed(root, "anna", store.RoleAccountant, testPassword, conf); err != nil {
				t.Fatal(err)
			}
			evs, err := s.AuditEvents(ctx, store.AuditFilter{Event: "user.created", Actor: "root"})
			if err != nil || len(evs) != 2 {
				t.Fatalf("user.created by root: %v, %v", evs, err)
			}
			if got, want := string(evs[0].Detail), `{"addr":"192.0.2.7","name":"anna","password_confirmed":true,"role":"accountant"}`; got != want {
				t.Fatalf("detail %s, want %s", got, want)
			}
		})
	})
}
