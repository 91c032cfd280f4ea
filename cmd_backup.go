package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

var backupCommand = command{
	name:    "backup",
	args:    "FILE",
	summary: "write a consistent copy of the journal, also while serve runs",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("backup", "name the file to write")
			}
			return backup(c, args[0], inv.stdout, inv.env)
		}
	},
}

// backup copies the journal to file (SQLite: VACUUM INTO; PostgreSQL:
// pg_dump's custom format, when pg_dump is installed).
func backup(c configFlags, file string, stdout io.Writer, env func(string) string) error {
	ctx := context.Background()
	st, err := c.open(ctx, env, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Backup(ctx, file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "journal copied to %s\n", file)
	return nil
}
