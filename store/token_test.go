package store_test

import (
	"context"
	"errors"
	"github.com/oncegate/oncegate/store/storetest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		t.Run("OK", func(t *testing.T) {
			s := j.Open(t)
			secret, tok, err := s.CreateToken(ctx, "agent-a", []string{"write", "read", "write"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, store.TokenPrefix) || len(secret) < 40 {
				t.Fatalf("secret %q is not a token", secret)
			}
			if got, want := strings.Join(tok.Scopes, ","), "read,write"; got != want {
				t.Fatalf("scopes = %q, want %q", got, want)
			}
			found, err := s.TokenBySecret(ctx, secret)
			if err != nil {
				t.Fatal(err)
			}
			if found.Agent != "agent-a" || !found.Has("write") || found.Has("pay") {
				t.Fatalf("found %+v", found)
			}
			if _, err := s.TokenBySecret(ctx, secret+"x"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("wrong secret: %v, want ErrNotFound", err)
			}
		})
		t.Run("Revoke", func(t *testing.T) {
			s := j.Open(t)
			secret, _, err := s.CreateToken(ctx, "agent-a", []string{"read"})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s.RevokeToken(ctx, "agent-a"); err != nil || n != 1 {
				t.Fatalf("revoke = %d, %v", n, err)
			}
			if _, err := s.TokenBySecret(ctx, secret); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("revoked token still valid: %v", err)
			}
			if _, err := s.RevokeToken(ctx, "agent-a"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second revoke: %v, want ErrNotFound", err)
			}
			list, err := s.ListTokens(ctx)
			if err != nil || len(list) != 1 || list[0].RevokedAt.IsZero() {
				t.Fatalf("list = %+v, %v", list, err)
			}
		})
		t.Run("ErrInvalid", func(t *testing.T) {
			s := j.Open(t)
			for _, c := range []struct {
				agent  string
				scopes []string
			}{{"", []string{"read"}}, {"agent a", []string{"read"}}, {"agent-a", []string{"admin"}}, {"agent-a", nil}} {
				if _, _, err := s.CreateToken(ctx, c.agent, c.scopes); !errors.Is(err, store.ErrInvalid) {
					t.Errorf("CreateToken(%q, %v) = %v, want ErrInvalid", c.agent, c.scopes, err)
				}
			}
		})
	})
}

// Token and user changes are audit events, written with the change.
func TestTokenAndUserChangesAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := store.WithActor(context.Background(), store.Actor{Kind: store.ActorSystem, Name: "cli"})
		s := j.Open(t)
		secret, tok, err := s.CreateToken(ctx, "agent-a", []string{"read"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RevokeToken(ctx, "agent-a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateUser(ctx, "anna", store.RoleAccountant, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRole(ctx, "anna", store.RoleOperator); err != nil {
			t.Fatal(err)
		}
		events, err := s.AuditEvents(ctx, store.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range events {
			names = append([]string{e.Event}, names...)
			if e.Actor.Name != "cli" {
				t.Errorf("%s audited as %+v", e.Event, e.Actor)
			}
			if strings.Contains(string(e.Detail), secret) || strings.Contains(string(e.Detail), "correct horse") {
				t.Errorf("%s detail holds a secret: %s", e.Event, e.Detail)
			}
		}
		if got, want := strings.Join(names, " "), "token.created token.revoked user.created user.role_changed"; got != want {
			t.Fatalf("events %q, want %q (token %d)", got, want, tok.ID)
		}
	})
}
