package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/oncegate/oncegate/store"
)

// contactFlags are --email and --telegram: where notices reach a user
// (docs/configuration.md, Notifications).
func contactFlags(fs *flag.FlagSet, c *store.Contact) {
	fs.StringVar(&c.Email, "email", "", "the `ADDR`ess notices e-mail the user at (\"-\" clears it)")
	fs.StringVar(&c.Telegram, "telegram", "", "the Telegram `CHAT_ID` notices reach the user in (\"-\" clears it)")
}

var userContactCommand = command{
	name:    "user contact",
	args:    "[--email ADDR|-] [--telegram CHAT_ID|-] NAME",
	summary: "set or show where notices reach a user (e-mail, Telegram)",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		var contact store.Contact
		contactFlags(fs, &contact)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("user contact", "name one user")
			}
			return withUserStore(c, inv, false, func(ctx context.Context, st *store.Store) error {
				if contact != (store.Contact{}) {
					if err := st.SetContact(ctx, args[0], contact); err != nil {
						return err
					}
				}
				now, err := st.ContactOf(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(inv.stdout, "notices reach %q by e-mail at %s and by Telegram in %s\n", args[0], orNone(now.Email), orNone(now.Telegram))
				return nil
			})
		}
	},
}

// orNone is v, or "(none)".
func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
