package main

import (
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oncegate/oncegate/store"
)

var tokenCreateCommand = command{
	name:    "token create",
	args:    "--name NAME --scopes read,draft,write,post,pay",
	summary: "make an agent token (its secret is printed once)",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		name := fs.String("name", "", "the agent `NAME` the token acts as")
		scopes := fs.String("scopes", "", "comma-separated `SCOPES`: "+strings.Join(store.Scopes, ","))
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("token create", "takes no arguments")
			}
			if *name == "" {
				return badUsage("token create", "--name is required")
			}
			if err := store.ValidateAgentName(*name); err != nil {
				return fmt.Errorf("token create: --name: %w", err)
			}
			list, err := store.ParseScopes(*scopes)
			if err != nil {
				return fmt.Errorf("token create: --scopes: %w", err)
			}
			ctx := cliContext()
			st, err := c.open(ctx, inv.env, false)
			if err != nil {
				return err
			}
			defer st.Close()
			secret, tok, err := st.CreateToken(ctx, *name, list)
			if err != nil {
				return err
			}
			fmt.Fprintf(inv.stdout, "token %d for agent %q, scopes %s; shown only now:\n%s\n", tok.ID, tok.Agent, strings.Join(tok.Scopes, ","), secret)
			return nil
		}
	},
}

var tokenListCommand = command{
	name:    "token list",
	args:    "",
	summary: "list agent tokens",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("token list", "takes no arguments")
			}
			ctx := cliContext()
			st, err := c.open(ctx, inv.env, false)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ListTokens(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(inv.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tAGENT\tSCOPES\tCREATED\tREVOKED")
			for _, t := range list {
				revoked := "-"
				if !t.RevokedAt.IsZero() {
					revoked = t.RevokedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, strings.Join(t.Scopes, ","), t.CreatedAt.Format(time.RFC3339), revoked)
			}
			return w.Flush()
		}
	},
}

var tokenRevokeCommand = command{
	name:    "token revoke",
	args:    "ID|NAME",
	summary: "revoke a token by its id, or all of an agent's tokens by its name",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("token revoke", "name one token id or agent")
			}
			ctx := cliContext()
			st, err := c.open(ctx, inv.env, false)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.RevokeToken(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(inv.stdout, "revoked %d token(s)\n", n)
			return nil
		}
	},
}
