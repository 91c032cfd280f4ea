package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"github.com/oncegate/oncegate/store"
)

// firstRun makes, on a journal that has none, what a first start needs:
// the first admin, and, when serve runs on the embedded defaults
// (withToken), an agent token with every scope, so the default is usable
// at once. Each secret is printed once, on stdout. Serve runs it once it
// holds its address: a bad or busy address stops serve before the secrets
// are printed, so the next start prints them instead of a log that
// scrolled past.
func firstRun(ctx context.Context, st *store.Store, stdout io.Writer, withToken bool) error {
	ctx = store.WithActor(ctx, store.Actor{Kind: store.ActorSystem, Name: "first-run"})
	if withToken {
		if err := firstRunToken(ctx, st, stdout); err != nil {
			return err
		}
	}
	return firstAdmin(ctx, st, stdout)
}

// firstRunToken makes and prints, once, an agent token with every scope
// on a journal that has none, so the embedded default is usable at once.
// Of gateways started together on one new journal, one makes and prints
// it.
func firstRunToken(ctx context.Context, st *store.Store, stdout io.Writer) error {
	n, err := st.CountTokens(ctx)
	if err != nil || n > 0 {
		return err
	}
	secret, tok, made, err := st.CreateFirstToken(ctx, "demo-agent", store.Scopes)
	if err != nil || !made {
		return err
	}
	fmt.Fprintf(stdout, "First run: made agent token %d for %q with scopes %s. It is shown only now:\n%s\n",
		tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
	return nil
}

// firstAdmin makes, on a journal with no users, the user "admin" with the
// admin role and a random password, and prints the password once.
func firstAdmin(ctx context.Context, st *store.Store, stdout io.Writer) error {
	n, err := st.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	// Of gateways started together on one new journal, one makes it and
	// prints the password; the others find it made.
	pw := randomPassword(20)
	if _, made, err := st.CreateFirstUser(ctx, "admin", store.RoleAdmin, pw); err != nil || !made {
		if err != nil {
			return fmt.Errorf("first admin: %w", err)
		}
		return nil
	}
	fmt.Fprintf(stdout, "First run: admin user \"admin\" with password %s — shown only now; at the first sign-in you choose your own.\n", pw)
	return nil
}

// randomPassword returns n characters from the URL-safe base64 alphabet.
// 64 symbols divide 256, so taking each byte modulo 64 is unbiased.
func randomPassword(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	buf := make([]byte, n)
	rand.Read(buf)
	for i, b := range buf {
		buf[i] = alphabet[b%64]
	}
	return string(buf)
}
