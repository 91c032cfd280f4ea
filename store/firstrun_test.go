package store_test

import (
	"context"
	"github.com/oncegate/oncegate/store/storetest"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// Of several first-run set-ups at once, one makes the first user and the
// first token and gets the token's secret; the others make nothing and
// fail not.
func TestFirstRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		ctx := context.Background()
		const n = 4
		var wg sync.WaitGroup
		users, tokens := make([]bool, n), make([]bool, n)
		secrets := make([]string, n)
		for i := range n {
			wg.Go(func() {
				_, made, err := s.CreateFirstUser(ctx, "admin", store.RoleAdmin, "a first password, long enough")
				if err != nil {
					t.Errorf("first user %d: %v", i, err)
				}
				users[i] = made
				secret, _, made, err := s.CreateFirstToken(ctx, "demo-agent", store.Scopes)
				if err != nil {
					t.Errorf("first token %d: %v", i, err)
				}
				tokens[i], secrets[i] = made, secret
			})
		}
		wg.Wait()
		count := func(made []bool) (c int) {
			for _, m := range made {
				if m {
					c++
				}
			}
			return c
		}
		if got, want := count(users), 1; got != want {
			t.Fatalf("first users made = %d, want %d", got, want)
		}
		if got, want := count(tokens), 1; got != want {
			t.Fatalf("first tokens made = %d, want %d", got, want)
		}
		for i, secret := range secrets {
			if (secret != "") != tokens[i] {
				t.Fatalf("set-up %d: secret %q, made %v", i, secret, tokens[i])
			}
		}
		if n, err := s.CountUsers(ctx); err != nil || n != 1 {
			t.Fatalf("users = %d, %v; want 1", n, err)
		}
	})
}
