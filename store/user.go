package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Roles of admin UI users.
const (
	RoleAdmin      = "admin"      // everything, including users and tokens
	RoleAccountant = "accountant" // approves and reviews operations
	RoleOperator   = "operator"   // watches and reconciles operations
	RoleAuditor    = "auditor"    // reads the journal and the audit trail
)

// Roles lists every role a user can have.
var Roles = []string{RoleAdmin, RoleAccountant, RoleOperator, RoleAuditor}

// Password length rules. The upper bound keeps hashing cost bounded.
const (
	MinPasswordChars = 12
	MaxPasswordBytes = 1024
)

// ErrBadCredentials is what Authenticate answers for an unknown name, a
// wrong password and a disabled user alike, so a caller cannot tell them
// apart. It wraps ErrNotFound.
var ErrBadCredentials = fmt.Errorf("wrong name or password, or the user is disabled: %w", ErrNotFound)

// DecidesMoney reports whether role approves or denies money operations.
// A person who grants it types their own password again
// (ConfirmPassword), and the grantee's sessions end, so they take it up
// by signing in anew.
func DecidesMoney(role string) bool { return role == RoleAccountant }

// ErrOwnRole: a person asked to change their own role. Another admin does
// it, so no one gives themselves the role that decides money.
var ErrOwnRole = fmt.Errorf("%w: no one changes their own role; another admin does", ErrInvalid)

// ErrConfirmRequired: a person granted a role that decides money without
// a Confirmation of their own, or asked for one with no password.
var ErrConfirmRequired = fmt.Errorf("%w: granting a role that decides money needs the granting person's password again", ErrInvalid)

// Confirmation is a person's own password, typed again and found right,
// for one grant of a role that decides money. Only ConfirmPassword makes
// one; the zero value confirms nothing.
type Confirmation struct {
	name string // the person who typed it
	addr string // where from
}

// ConfirmPassword checks the password of the person acting (ctx's actor)
// typed again, as their sign-in from addr would be checked and under the
// same throttle (Login): ErrThrottled with the wait, ErrLoginBusy, or
// ErrBadCredentials, each counted as a failed sign-in is. An empty
// password is ErrConfirmRequired and counts nothing; an actor that is no
// person is ErrInvalid.
func (s *Store) ConfirmPassword(ctx context.Context, password, addr string) (Confirmation, time.Duration, error) {
	a := actorOf(ctx)
	switch {
	case a.Kind != ActorUser:
		return Confirmation{}, 0, fmt.Errorf("confirm password: %w: only a person confirms", ErrInvalid)
	case password == "":
		return Confirmation{}, 0, fmt.Errorf("confirm password: %w", ErrConfirmRequired)
	}
	u, wait, err := s.Login(ctx, a.Name, password, addr)
	if err != nil {
		return Confirmation{}, wait, fmt.Errorf("confirm password: %w", err)
	}
	return Confirmation{name: u.Name, addr: addr}, 0, nil
}

// by reports whether c confirms the grant of role by ctx's actor, and
// refuses a person's grant of a role that decides money without it.
func (c Confirmation) by(ctx context.Context, role string) (bool, error) {
	a := actorOf(ctx)
	ok := c.name != "" && a.Kind == ActorUser && strings.EqualFold(c.name, a.Name)
	if DecidesMoney(role) && a.Kind == ActorUser && !ok {
		return false, ErrConfirmRequired
	}
	return ok, nil
}

// User is a person who signs in to the admin UI. The password hash never
// leaves the store.
type User struct {
	ID                int64
	Name              string
	Role              string
	Disabled          bool
	CreatedAt         time.Time
	PasswordChangedAt time.Time
	// MustChangePassword: someone else chose the user's password (an
	// admin, a command, the first run). Until the user chooses their own,
	// the admin UI lets them do nothing else.
	MustChangePassword bool
}

var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

func validateUserName(name string) error {
	if !userName.MatchString(name) {
		return fmt.Errorf("%w: user name must be 1-64 characters: Latin letters A-Z a-z, digits 0-9 and . _ @ -, starting with a letter or digit (e.g. anna.petrova)", ErrInvalid)
	}
	return nil
}

// CheckNewUser refuses what CreateUser would refuse of a name and role,
// so a command can say so before it asks for a password.
func CheckNewUser(name, role string) error {
	if err := validateUserName(name); err != nil {
		return err
	}
	return validateRole(role)
}

func validateRole(role string) error {
	if !slices.Contains(Roles, role) {
		return fmt.Errorf("%w: unknown role %q (known: %s)", ErrInvalid, role, strings.Join(Roles, ", "))
	}
	return nil
}

// ValidatePassword checks the password rules: at least MinPasswordChars
// characters and at most MaxPasswordBytes bytes.
func ValidatePassword(password string) error {
	if utf8.RuneCountInString(password) < MinPasswordChars {
		return fmt.Errorf("%w: password must be at least %d characters", ErrInvalid, MinPasswordChars)
	}
	if len(password) > MaxPasswordBytes {
		return fmt.Errorf("%w: password must be at most %d bytes", ErrInvalid, MaxPasswordBytes)
	}
	return nil
}

// CreateUser adds a user. Whoever makes the user chose the password, so
// the user must choose their own at first sign-in (MustChangePassword). A
// name taken already, in any letter case, is ErrConflict; a bad name, role
// or password is ErrInvalid. A person (ctx's actor) adds a user with a
// role that decides money with CreateUserConfirmed.
func (s *Store) CreateUser(ctx context.Context, name, role, password string) (User, error) {
	return s.CreateUserConfirmed(ctx, name, role, password, Confirmation{})
}

// CreateUserConfirmed is CreateUser by a person who confirmed their own
// password (conf) to grant a role that decides money; user.created says
// whether they did.
func (s *Store) CreateUserConfirmed(ctx context.Context, name, role, password string, conf Confirmation) (User, error) {
	for _, err := range []error{validateUserName(name), validateRole(role), ValidatePassword(password)} {
		if err != nil {
			return User{}, fmt.Errorf("create user: %w", err)
		}
	}
	confirmed, err := conf.by(ctx, role)
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	// Hash before the write: it takes a good part of a second, and the
	// writer serves everyone's writes.
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	var u User
	err = s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		u, err = s.grantUserTx(ctx, tx, name, role, hash, grant{confirmed, conf.addr})
		return err
	})
	return u, err
}

// grant is how a role that decides money was granted: with the granting
// person's password confirmed, from addr.
type grant struct {
	confirmed bool
	addr      string
}

// detail adds what the audit event of a grant of role says about it.
func (g grant) detail(d map[string]any, role string) map[string]any {
	if !DecidesMoney(role) {
		return d
	}
	d["password_confirmed"] = g.confirmed
	if g.addr != "" {
		d["addr"] = g.addr
	}
	return d
}

func (s *Store) createUserTx(ctx context.Context, tx *txn, name, role, hash string) (User, error) {
	return s.grantUserTx(ctx, tx, name, role, hash, grant{})
}

// grantUserTx adds the user, the grant of their role as g says.
func (s *Store) grantUserTx(ctx context.Context, tx *txn, name, role, hash string, g grant) (User, error) {
	now := s.now().Truncate(time.Microsecond) // as stored
	var id int64
	err := tx.QueryRowContext(ctx, `
		INSERT INTO users (name, role, password_hash, created_at, updated_at, password_changed_at, must_change_password)
		VALUES (?, ?, ?, ?, ?, ?, 1) RETURNING id`,
		name, role, hash, formatTime(now), formatTime(now), formatTime(now)).Scan(&id)
	if err := interpretError(err); errors.Is(err, ErrConflict) {
		return User{}, fmt.Errorf("create user %q: %w: the name is taken", name, ErrConflict)
	} else if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	if err := s.appendAudit(ctx, tx, "user.created", "", g.detail(map[string]any{"name": name, "role": role}, role)); err != nil {
		return User{}, err
	}
	return User{ID: id, Name: name, Role: role, CreatedAt: now, PasswordChangedAt: now, MustChangePassword: true}, nil
}

// SetPassword is a reset by someone else (an admin, the command line): it
// replaces the user's password, ends all of their sessions, so whoever
// knew the old one is locked out, and makes the user choose their own
// password at their next sign-in (MustChangePassword). A user's change of
// their own password is ChangeOwnPassword.
func (s *Store) SetPassword(ctx context.Context, name, password string) error {
	if err := ValidatePassword(password); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	hash, err := hashPassword(ctx, password) // outside the write, as in CreateUser
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.setPasswordTx(ctx, tx, name, hash)
	})
}

func (s *Store) setPasswordTx(ctx context.Context, tx *txn, name, hash string) error {
	now := formatTime(s.now())
	res, err := tx.ExecContext(ctx, `
		UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ?, must_change_password = 1
		WHERE lower(name) = lower(?)`,
		hash, now, now, name)
	if err := mustAffect(res, err, name); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	if _, err := deleteUserSessions(ctx, tx, name); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	if err := s.appendAudit(ctx, tx, "user.password_set", "", map[string]any{"name": name, "must_change": true}); err != nil {
		return err
	}
	return nil
}

// ChangeOwnPassword is the user's own choice of a new password: the
// caller has checked that the person at hand is the user (a session and
// the current password). It ends all of the user's sessions (another
// browser signed in with the old password included; the caller makes the
// person a new one), clears MustChangePassword, and audits
// user.password_changed with self=true and the address it came from
// (addr), so the trail shows that whoever signs in as the user from now
// on chose the password themselves, and from where.
func (s *Store) ChangeOwnPassword(ctx context.Context, name, password, addr string) error {
	if err := ValidatePassword(password); err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	hash, err := hashPassword(ctx, password) // outside the write, as in CreateUser
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.changeOwnPasswordTx(ctx, tx, name, hash, addr)
	})
}

func (s *Store) changeOwnPasswordTx(ctx context.Context, tx *txn, name, hash, addr string) error {
	u, err := userByName(ctx, tx, name)
	if err != nil {
		return fmt.Errorf("change password of %q: %w", name, err)
	}
	now := formatTime(s.now())
	if _, err := tx.ExecContext(ctx, `
		UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ?, must_change_password = 0
		WHERE id = ?`, hash, now, now, u.ID); err != nil {
		return fmt.Errorf("change password: %w", interpretError(err))
	}
	if _, err := deleteUserSessions(ctx, tx, u.Name); err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	return s.appendAudit(ctx, tx, "user.password_changed", "", map[string]any{
		"name": u.Name, "self": true, "was_required": u.MustChangePassword, "addr": addr,
	})
}

// DisableUser stops the user from signing in and ends their sessions.
// Disabling the last enabled admin is ErrInvalid, so the UI cannot lock
// everyone out (the CLI can still add or enable another admin).
func (s *Store) DisableUser(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.disableUserTx(ctx, tx, name)
	})
}

func (s *Store) disableUserTx(ctx context.Context, tx *txn, name string) error {

	u, err := userByName(ctx, tx, name)
	if err != nil {
		return fmt.Errorf("disable user %q: %w", name, err)
	}
	if u.Role == RoleAdmin && !u.Disabled {
		if err := keepAnAdmin(ctx, tx, u.ID); err != nil {
			return fmt.Errorf("disable user %q: %w", name, err)
		}
	}
	now := formatTime(s.now())
	if _, err := tx.ExecContext(ctx, `
		UPDATE users SET disabled_at = coalesce(disabled_at, ?), updated_at = ? WHERE id = ?`,
		now, now, u.ID); err != nil {
		return fmt.Errorf("disable user: %w", err)
	}
	if _, err := deleteUserSessions(ctx, tx, name); err != nil {
		return fmt.Errorf("disable user: %w", err)
	}
	if err := s.appendAudit(ctx, tx, "user.disabled", "", map[string]any{"name": u.Name}); err != nil {
		return err
	}
	return nil
}

// EnableUser lets a disabled user sign in again.
func (s *Store) EnableUser(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.enableUserTx(ctx, tx, name)
	})
}

func (s *Store) enableUserTx(ctx context.Context, tx *txn, name string) error {
	now := formatTime(s.now())
	res, err := tx.ExecContext(ctx, `
		UPDATE users SET disabled_at = NULL, updated_at = ? WHERE lower(name) = lower(?)`, now, name)
	if err := mustAffect(res, err, name); err != nil {
		return fmt.Errorf("enable user: %w", err)
	}
	if err := s.appendAudit(ctx, tx, "user.enabled", "", map[string]any{"name": name}); err != nil {
		return err
	}
	return nil
}

// SetRole changes the user's role; it applies to their open sessions at
// once. Demoting the last enabled admin is ErrInvalid. A person (ctx's
// actor) changing their own role is ErrOwnRole, and one granting a role
// that decides money is ErrConfirmRequired (they use SetRoleConfirmed);
// the command line (a system actor) may grant it.
func (s *Store) SetRole(ctx context.Context, name, role string) error {
	return s.SetRoleConfirmed(ctx, name, role, Confirmation{})
}

// SetRoleConfirmed is SetRole by a person who confirmed their own password
// (conf). A grant is a change to a role that decides money from one that
// does not: the user's sessions end in the same step, so they take the
// role up by signing in anew, and user.role_changed says whether the
// password was confirmed, from where, and how many sessions ended.
func (s *Store) SetRoleConfirmed(ctx context.Context, name, role string, conf Confirmation) error {
	if err := validateRole(role); err != nil {
		return fmt.Errorf("set role: %w", err)
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.setRoleTx(ctx, tx, name, role, conf)
	})
}

func (s *Store) setRoleTx(ctx context.Context, tx *txn, name, role string, conf Confirmation) error {
	u, err := userByName(ctx, tx, name)
	if err != nil {
		return fmt.Errorf("set role of %q: %w", name, err)
	}
	if a := actorOf(ctx); a.Kind == ActorUser && strings.EqualFold(a.Name, u.Name) {
		return fmt.Errorf("set role of %q: %w", name, ErrOwnRole)
	}
	granted := DecidesMoney(role) && !DecidesMoney(u.Role)
	confirmed, err := conf.by(ctx, role)
	if err != nil && granted {
		return fmt.Errorf("set role of %q: %w", name, err)
	}
	if u.Role == RoleAdmin && role != RoleAdmin && !u.Disabled {
		if err := keepAnAdmin(ctx, tx, u.ID); err != nil {
			return fmt.Errorf("set role of %q: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET role = ?, updated_at = ? WHERE id = ?`,
		role, formatTime(s.now()), u.ID); err != nil {
		return fmt.Errorf("set role: %w", interpretError(err))
	}
	detail := map[string]any{"name": u.Name, "from": u.Role, "role": role}
	if granted {
		// The grantee takes the role up by signing in anew.
		n, err := deleteUserSessions(ctx, tx, u.Name)
		if err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		detail = grant{confirmed, conf.addr}.detail(detail, role)
		detail["sessions_ended"] = n
	}
	return s.appendAudit(ctx, tx, "user.role_changed", "", detail)
}

// Users returns every user, oldest first.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}

// UserByID returns the user with id, or ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	u, err := scanUser(s.rdb.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
	if err != nil {
		return User{}, fmt.Errorf("find user %d: %w", id, interpretError(err))
	}
	return u, nil
}

// CountUsers returns how many users exist, disabled ones included.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// Authenticate returns the enabled user with that name and password, or
// ErrBadCredentials. It takes about as long whether or not the name
// exists. A hash made with other parameters than the current ones is
// replaced on success. It counts nothing: a person's sign-in goes through
// Login, which throttles.
func (s *Store) Authenticate(ctx context.Context, name, password string) (User, error) {
	if len(password) > MaxPasswordBytes {
		return User{}, fmt.Errorf("authenticate: %w", ErrBadCredentials)
	}
	var u User
	var hash string
	var disabled, created, changed sql.NullString
	err := s.rdb.QueryRowContext(ctx, `
		SELECT id, name, role, password_hash, disabled_at, created_at, password_changed_at, must_change_password
		FROM users WHERE lower(name) = lower(?)`, strings.ToValidUTF8(name, "\uFFFD")).
		Scan(&u.ID, &u.Name, &u.Role, &hash, &disabled, &created, &changed, &u.MustChangePassword)
	if errors.Is(err, sql.ErrNoRows) {
		// Spend the time a real check would, so timing does not tell
		// whether the name exists.
		if err := dummyVerify(ctx, password); err != nil {
			return User{}, fmt.Errorf("authenticate: %w", err)
		}
		return User{}, fmt.Errorf("authenticate: %w", ErrBadCredentials)
	}
	if err != nil {
		return User{}, fmt.Errorf("authenticate: %w", err)
	}
	u.Disabled = disabled.Valid
	u.CreatedAt, u.PasswordChangedAt = parseTime(created), parseTime(changed)

	ok, stale, err := verifyPassword(ctx, password, hash)
	if err != nil {
		return User{}, fmt.Errorf("authenticate: %w", err)
	}
	if !ok || u.Disabled {
		return User{}, fmt.Errorf("authenticate: %w", ErrBadCredentials)
	}
	if stale {
		if err := s.rehash(ctx, u.ID, hash, password); err != nil {
			return User{}, fmt.Errorf("authenticate: %w", err)
		}
	}
	return u, nil
}

// rehash replaces the hash old of user id by one with the current
// parameters, unless the password changed meanwhile.
func (s *Store) rehash(ctx context.Context, id int64, old, password string) error {
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `
		UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ? AND password_hash = ?`,
		hash, formatTime(s.now()), id, old)
	if err != nil {
		return fmt.Errorf("rehash password: %w", err)
	}
	return nil
}

const userColumns = `id, name, role, disabled_at, created_at, password_changed_at, must_change_password`

func scanUser(sc scanner) (User, error) {
	var u User
	var disabled, created, changed sql.NullString
	if err := sc.Scan(&u.ID, &u.Name, &u.Role, &disabled, &created, &changed, &u.MustChangePassword); err != nil {
		return User{}, err
	}
	u.Disabled = disabled.Valid
	u.CreatedAt, u.PasswordChangedAt = parseTime(created), parseTime(changed)
	return u, nil
}

func userByName(ctx context.Context, tx *txn, name string) (User, error) {
	u, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE lower(name) = lower(?)`, name))
	return u, interpretError(err)
}

// keepAnAdmin refuses when the user id is the only enabled admin.
func keepAnAdmin(ctx context.Context, tx *txn, id int64) error {
	var others int
	err := tx.QueryRowContext(ctx, `
		SELECT count(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL AND id <> ?`, id).Scan(&others)
	if err != nil {
		return err
	}
	if others == 0 {
		return fmt.Errorf("%w: this is the last enabled admin; make another admin first", ErrInvalid)
	}
	return nil
}

// deleteUserSessions ends the sessions of user name and says how many.
func deleteUserSessions(ctx context.Context, tx *txn, name string) (int64, error) {
	res, err := tx.ExecContext(ctx, `
		DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE lower(name) = lower(?))`, name)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// mustAffect turns an update of no row into ErrNotFound for user name.
func mustAffect(res sql.Result, err error, name string) error {
	if err != nil {
		return interpretError(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	return nil
}

// Password hashing: argon2id, stored as a PHC string
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key> (standard
// base64 without padding), so the parameters can change without breaking
// older hashes.

// hashParams are argon2id's cost parameters.
type hashParams struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
}

// hashCost is what new hashes use: 64 MiB, 3 passes, 2 lanes. Tests of
// this package lower it (export_test.go); production never does.
var hashCost = hashParams{memory: 64 * 1024, time: 3, threads: 2}

// String is the parameters' part of a PHC string.
func (p hashParams) String() string {
	return fmt.Sprintf("m=%d,t=%d,p=%d", p.memory, p.time, p.threads)
}

const (
	saltLen = 16
	keyLen  = 32
)

// hashSlots bounds concurrent hashing: each one holds hashCost.memory, so
// a burst of sign-ins cannot take the process's memory.
var hashSlots = make(chan struct{}, 4)

// argon2ID runs argon2id in a hash slot.
func argon2ID(ctx context.Context, password string, salt []byte, p hashParams, n uint32) ([]byte, error) {
	select {
	case hashSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	key := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, n)
	<-hashSlots
	if len(hashSlots) == 0 {
		// The hash's memory goes back to the system once no other hash
		// runs: a server that signed someone in idles at its usual size,
		// not 64 MiB above it until the scavenger gets round to it.
		debug.FreeOSMemory()
	}
	return key, nil
}

// hashPassword hashes password with a fresh salt and hashCost.
func hashPassword(ctx context.Context, password string) (string, error) {
	return hashPasswordWith(ctx, password, hashCost)
}

func hashPasswordWith(ctx context.Context, password string, p hashParams) (string, error) {
	salt := make([]byte, saltLen)
	rand.Read(salt)
	key, err := argon2ID(ctx, password, salt, p, keyLen)
	if err != nil {
		return "", err
	}
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$%s$%s$%s",
		argon2.Version, p, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// verifyPassword reports whether password matches the PHC string
// encoded, in constant time, and whether the hash's parameters are stale.
func verifyPassword(ctx context.Context, password, encoded string) (ok, stale bool, err error) {
	p, salt, key, err := parseHash(encoded)
	if err != nil {
		return false, false, err
	}
	got, err := argon2ID(ctx, password, salt, p, uint32(len(key)))
	if err != nil {
		return false, false, err
	}
	ok = subtle.ConstantTimeCompare(got, key) == 1
	return ok, p != hashCost || len(salt) != saltLen || len(key) != keyLen, nil
}

// dummyVerify costs what verifying a current hash costs.
func dummyVerify(ctx context.Context, password string) error {
	_, err := argon2ID(ctx, password, make([]byte, saltLen), hashCost, keyLen)
	return err
}

// parseHash splits a PHC argon2id string, refusing parameters out of sane
// bounds so a damaged row cannot make the process allocate gigabytes.
func parseHash(encoded string) (hashParams, []byte, []byte, error) {
	bad := func(why string) (hashParams, []byte, []byte, error) {
		return hashParams{}, nil, nil, fmt.Errorf("stored password hash: %s", why)
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return bad("not an argon2id PHC string")
	}
	if parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return bad("unsupported argon2 version " + parts[2])
	}
	var p hashParams
	_, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads)
	if err != nil || p.String() != parts[3] {
		return bad("parameters " + parts[3])
	}
	if p.memory < 8*uint32(p.threads) || p.memory > 1<<20 || p.time < 1 || p.time > 64 || p.threads < 1 {
		return bad("parameters out of bounds " + parts[3])
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return bad("salt")
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return bad("key")
	}
	return p, salt, key, nil
}
