package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/oncegate/oncegate/store"
)

// The user commands manage admin UI users. add and passwd take the
// password from ONCEGATE_PASSWORD, else from the first line of stdin,
// and read it before opening the journal, so a refused one leaves no
// trace.

var userAddCommand = command{
	name:    "user add",
	args:    "--role " + strings.Join(store.Roles, "|") + " [--email ADDR] [--telegram CHAT_ID] NAME",
	summary: "add an admin UI user (password from $ONCEGATE_PASSWORD or stdin)",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		role := fs.String("role", "", "the new user's `ROLE`: "+strings.Join(store.Roles, ", "))
		var contact store.Contact
		contactFlags(fs, &contact)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("user add", "name one user")
			}
			if *role == "" {
				return badUsage("user add", "--role is required (%s)", strings.Join(store.Roles, ", "))
			}
			// The name and role are checked before a password is asked for.
			if err := store.CheckNewUser(args[0], *role); err != nil {
				return fmt.Errorf("user add: %w", err)
			}
			if err := store.CheckContact(contact); err != nil {
				return fmt.Errorf("user add: %w", err)
			}
			password, err := readUserPassword(inv.stdin, inv.stderr, inv.env)
			if err != nil {
				return fmt.Errorf("user add: %w", err)
			}
			return withUserStore(c, inv, false, func(ctx context.Context, st *store.Store) error {
				u, err := st.CreateUser(ctx, args[0], *role, password)
				if err != nil {
					return err
				}
				if contact != (store.Contact{}) {
					if err := st.SetContact(ctx, u.Name, contact); err != nil {
						return err
					}
				}
				fmt.Fprintf(inv.stdout, "user %d %q added with role %s; they choose their own password when they first sign in\n", u.ID, u.Name, u.Role)
				return nil
			})
		}
	},
}

var userPasswdCommand = command{
	name:    "user passwd",
	args:    "NAME",
	summary: "set a user's password (from $ONCEGATE_PASSWORD or stdin) and end their sessions",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("user passwd", "name one user")
			}
			password, err := readUserPassword(inv.stdin, inv.stderr, inv.env)
			if err != nil {
				return fmt.Errorf("user passwd: %w", err)
			}
			return withUserStore(c, inv, false, func(ctx context.Context, st *store.Store) error {
				if err := st.SetPassword(ctx, args[0], password); err != nil {
					return err
				}
				fmt.Fprintf(inv.stdout, "password of %q changed; their sessions are ended, and they choose their own when they next sign in\n", args[0])
				return nil
			})
		}
	},
}

var userDisableCommand = userToggle("disable", "disable a user and end their sessions", (*store.Store).DisableUser, "user %q disabled; their sessions are ended\n")

var userEnableCommand = userToggle("enable", "enable a disabled user", (*store.Store).EnableUser, "user %q enabled\n")

// userToggle makes "user disable" and "user enable".
func userToggle(sub, summary string, do func(*store.Store, context.Context, string) error, done string) command {
	name := "user " + sub
	return command{
		name:    name,
		args:    "NAME",
		summary: summary,
		setup: func(fs *flag.FlagSet) func(invocation, []string) error {
			var c configFlags
			c.flags(fs)
			return func(inv invocation, args []string) error {
				if len(args) != 1 {
					return badUsage(name, "name one user")
				}
				return withUserStore(c, inv, false, func(ctx context.Context, st *store.Store) error {
					if err := do(st, ctx, args[0]); err != nil {
						return err
					}
					fmt.Fprintf(inv.stdout, done, args[0])
					return nil
				})
			}
		},
	}
}

var userListCommand = command{
	name:    "user list",
	args:    "",
	summary: "list admin UI users",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("user list", "takes no arguments")
			}
			return withUserStore(c, inv, false, func(ctx context.Context, st *store.Store) error {
				users, err := st.Users(ctx)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(inv.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tROLE\tSTATUS\tPASSWORD\tCREATED")
				for _, u := range users {
					status := "active"
					if u.Disabled {
						status = "disabled"
					}
					// A password someone else chose (user add, user passwd)
					// is replaced by the user's own at their next sign-in.
					password := "own"
					if u.MustChangePassword {
						password = "to-choose"
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Name, u.Role, status, password, u.CreatedAt.Format(time.RFC3339))
				}
				return w.Flush()
			})
		}
	},
}

// withUserStore opens the journal (a new one only if create) and runs do
// on it as the command line.
func withUserStore(c configFlags, inv invocation, create bool, do func(context.Context, *store.Store) error) error {
	ctx := cliContext()
	st, err := c.open(ctx, inv.env, create)
	if err != nil {
		return err
	}
	defer st.Close()
	return do(ctx, st)
}

// readUserPassword takes the password from ONCEGATE_PASSWORD (saying so
// on stderr), else from the first line of stdin. At a terminal it prompts on stderr, twice,
// reads without echo, and the two must match.
func readUserPassword(stdin io.Reader, stderr io.Writer, env func(string) string) (string, error) {
	if pw := env("ONCEGATE_PASSWORD"); pw != "" {
		// Said, so a password piped on stdin as well is not taken for
		// the one set.
		fmt.Fprintln(stderr, "the password is the one in $ONCEGATE_PASSWORD; stdin is not read")
		return pw, checkUserPassword(pw)
	}
	f, tty := stdin.(*os.File)
	tty = tty && term.IsTerminal(int(f.Fd()))
	r := bufio.NewReader(stdin)
	line := func(prompt string) (string, error) {
		if tty {
			// At a terminal: prompt, and read without echo.
			fmt.Fprint(os.Stderr, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(os.Stderr)
			if err != nil {
				return "", fmt.Errorf("read password: %w", err)
			}
			return string(b), nil
		}
		s, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password: %w", err)
		}
		return strings.TrimRight(s, "\r\n"), nil
	}
	pw, err := line("Password: ")
	if err != nil {
		return "", err
	}
	if err := checkUserPassword(pw); err != nil {
		return "", err
	}
	if tty {
		again, err := line("Password again: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", errors.New("the two passwords differ")
		}
	}
	return pw, nil
}

// checkUserPassword refuses an empty or short password with a message
// saying how to give one.
func checkUserPassword(pw string) error {
	if pw == "" {
		return errors.New("no password given: set ONCEGATE_PASSWORD or write it as the first line of stdin")
	}
	if err := store.ValidatePassword(pw); err != nil {
		return fmt.Errorf("password refused: %w", err)
	}
	return nil
}
