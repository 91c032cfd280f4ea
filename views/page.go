package views

// Page is what every admin page shares: the signed-in user, the shell's
// navigation, the form token, the language and a one-time message. Each
// page's view model embeds it.
type Page struct {
	Title   string
	Lang    string  // "ru" or "en"
	L       *Labels // the interface texts in Lang
	Contour string  // the gateway's contour (test, prod, …)

	User      string // signed-in user's name; empty on the sign-in page
	RoleLabel string // the user's role, for people
	CSRF      string // the session's form token, sent back by every form

	Nav        []NavItem
	LangSwitch Link // the link to the other language

	Flash     string // a message after a redirect, shown once
	FlashKind string // "ok" or "error"

	// TimeZone names the zone every time on the page is shown in, e.g.
	// "MSK, UTC+03:00".
	TimeZone string

	// Refresh, when positive, lets live.js reload the page every so many
	// seconds while no form is being filled in.
	Refresh int
}

// NavItem is one link of the shell's navigation.
type NavItem struct {
	ID     string // data-testid suffix: nav-<ID>
	Href   string
	Label  string
	Active bool
	Count  int // shown beside the label when positive: what waits there
}

// Link is a link with its text.
type Link struct {
	Href  string
	Label string
}

// Option is one choice of a select or a group of checkboxes.
type Option struct {
	Value    string
	Label    string
	Selected bool
}

// OptionGroup is a named group of a select's choices.
type OptionGroup struct {
	Label   string
	Options []Option
}

// Field is one labelled value in a list of facts.
type Field struct {
	Label  string
	Value  string
	Href   string // when set, the value links there
	TestID string // data-testid of the value, when set
	Mono   bool   // show in a fixed-width font (keys, hashes, ids)
	// Raw is what a target said as it said it, behind a click, when
	// Value says it in words.
	Raw string
}

// EventRow is one audit event as the pages show it.
type EventRow struct {
	ID       int64
	At       string
	Actor    string // "kind: name"
	Event    string // the event's name, e.g. operation.succeeded
	Label    string // the event's name for people
	Key      string // operation key, when the event is about one
	KeyHref  string
	Detail   string  // the event's JSON detail
	Fields   []Field // the detail as labelled fields; Detail when it is not JSON
	HashTail string  // the last characters of the chain hash
	// Repeat, above 1, says this row stands for a pair of events that
	// came so many times in a row (look-ups that kept failing and were
	// taken up again); Label then names both.
	Repeat int
}

// LinesTable is an array of objects in a request (invoice or receipt
// lines) as a table, with the lines' total when they have one.
type LinesTable struct {
	Title   string
	TestID  string
	Columns []string
	Rows    [][]string
	Total   string // the lines' total, "" when they have none
}
