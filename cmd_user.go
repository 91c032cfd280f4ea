package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/oncegate/oncegate/store"
)

// cmdUser manages admin UI users:
//
//	oncegate user add [--config F] [--data D] --role ROLE NAME
//	oncegate user passwd NAME | disable NAME | enable NAME | list
//
// add and passwd take the password from ONCEGATE_PASSWORD, else from the
// first line of stdin.
func cmdUser(args []string, stdin io.Reader, stdout io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("user: say add, passwd, disable, enable or list: %w", errUsage)
	}
	sub, args := args[0], args[1:]
	var c common
	fs := newFlags("user "+sub, &c)
	role := fs.String("role", "", "role of a new user: "+strings.Join(store.Roles, ", "))
	if err := parse(fs, args); err != nil {
		return err
	}
	switch sub {
	case "add", "passwd", "disable", "enable":
		if fs.NArg() != 1 {
			return fmt.Errorf("user %s: name one user: %w", sub, errUsage)
		}
	case "list":
		if fs.NArg() != 0 {
			return fmt.Errorf("user list takes no arguments: %w", errUsage)
		}
	default:
		return fmt.Errorf("user: unknown subcommand %q: %w", sub, errUsage)
	}
	if sub == "add" && *role == "" {
		return fmt.Errorf("user add: --role is required (%s): %w", strings.Join(store.Roles, ", "), errUsage)
	}
	name := fs.Arg(0)

	// Read the password before opening the journal, so a refused one
	// leaves no trace.
	var password string
	if sub == "add" || sub == "passwd" {
		pw, err := readUserPassword(stdin, env)
		if err != nil {
			return fmt.Errorf("user %s: %w", sub, err)
		}
		password = pw
	}

	ctx := cliContext()
	st, err := c.open(ctx, env, sub == "add")
	if err != nil {
		return err
	}
	defer st.Close()

	switch sub {
	case "add":
		u, err := st.CreateUser(ctx, name, *role, password)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %d %q added with role %s\n", u.ID, u.Name, u.Role)
	case "passwd":
		if err := st.SetPassword(ctx, name, password); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "password of %q changed; their sessions are ended\n", name)
	case "disable":
		if err := st.DisableUser(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %q disabled; their sessions are ended\n", name)
	case "enable":
		if err := st.EnableUser(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %q enabled\n", name)
	case "list":
		users, err := st.Users(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tROLE\tSTATUS\tCREATED")
		for _, u := range users {
			status := "active"
			if u.Disabled {
				status = "disabled"
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", u.ID, u.Name, u.Role, status, u.CreatedAt.Format(time.RFC3339))
		}
		return w.Flush()
	}
	return nil
}

// readUserPassword takes the password from ONCEGATE_PASSWORD, else from
// the first line of stdin. At a terminal it prompts on stderr, twice,
// reads without echo, and the two must match.
func readUserPassword(stdin io.Reader, env func(string) string) (string, error) {
	if pw := env("ONCEGATE_PASSWORD"); pw != "" {
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

// firstAdmin makes, on a journal with no users, the user "admin" with the
// admin role and a random password, and prints the password once.
func firstAdmin(ctx context.Context, st *store.Store, stdout io.Writer) error {
	n, err := st.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	pw := randomPassword(20)
	if _, err := st.CreateUser(ctx, "admin", store.RoleAdmin, pw); err != nil {
		return fmt.Errorf("first admin: %w", err)
	}
	fmt.Fprintf(stdout, "First run: admin user \"admin\" with password %s — shown only now; change it with 'oncegate user passwd admin'.\n", pw)
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
