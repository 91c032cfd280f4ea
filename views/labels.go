package views

import "fmt"

// Labels are the interface texts of the admin UI in one language. Texts
// with verbs are fmt formats.
type Labels struct {
	// Shell and navigation.
	Navigation, Contour, SignOut, SwitchTo                                 string
	NavDashboard, NavApprovals, NavReview, NavOperations, NavAudit         string
	NavTokens, NavUsers                                                    string
	BackToDashboard                                                        string
	SignInTitle, SignIn, UserName, Password                                string
	SignOutTitle, SignOutLead                                              string
	Any, Apply, Reset, Older, Newest, Total, Actions, You, Comment         string
	CommentOptional                                                        string
	ColTime, ColActor, ColEvent, ColOperation, ColDetail, ColStatus        string
	ColCount                                                               string
	Created, Updated, Completed, Intent, Target, Agent, ActorID, RequestID string
	Fingerprint, KeyPrefix, DateFrom, DateTo, TargetObject, Reason, Result string
	AttemptsLabel, AttemptsShort, LastAttempt, LookupFailures, NextCheck   string
	NextCheckTitle                                                         string
	Flagged, History, Status, OperationKey, ErrorCode, ErrorMessage, Lease string
	ErrorField                                                             string
	Yes, No, None                                                          string

	// Dashboard.
	DashboardTitle, ByStatus                                        string
	CardApprovals, CardUnknown, CardFlagged, CardOldest, CardNoneOK string
	CardApprovalsHint, CardUnknownHint, CardOldestHint              string

	// Approvals.
	ApprovalsTitle, ApprovalsLead, ApprovalsEmpty             string
	Order, Payment, Customer, Account, Note, RequestedBy      string
	AgentRevoked                                              string
	TimesIn                                                   string // "times are shown in"
	ChargeOf                                                  string // "a charge of" (a refund's payment)
	Waiting, Approve, Deny, LeftFmt, Expired                  string
	ApprovalSection, ApprovalStatus, Expires, DecidedBy       string
	DecidedAt                                                 string
	ApprovedSucceeded, ApprovedRunFmt                         string
	ErrApprovalExpired, ErrApprovalDecided, ErrNoSuchApproval string
	ErrCommentTooLong                                         string // %d: the limit
	// Who may decide, and how they came to: ApproverGrantedFmt and
	// ApproverCreatedFmt take the role, when, and who granted it.
	ApproversTitle, ApproversNone, ApproverGrantedFmt, ApproverCreatedFmt string
	ApproverUnknown, ApproverConfirmed, ApproverUnconfirmed, ApproverSelf string
	ByCommandLine                                                         string

	// Suspected duplicates (an approval of kind duplicate).
	DuplicateTitle, DuplicateLead, NotDuplicate, ConfirmDuplicate string
	ThisOperation, EarlierOperation, DuplicateOf, Field           string
	SameEvent                                                     string // another operation of the same business event

	// Review.
	ReviewTitle, ReviewLead, ReviewEmpty, ReviewAll, ReviewFlagged string
	ReconcileNow, ResolveByHand, FoundAtTarget, NotFoundAtTarget   string
	TargetObjectIfFound, ReasonRequired, Resolve, ToReview         string
	ErrOutcomeRequired, ErrReasonRequired, ErrObjectRequired       string
	ErrNotUnknown, ErrReconcileFailed                              string

	// Operations.
	OperationsTitle, OperationsEmpty, Summary, RequestSummary string
	Transitions, InAudit, NoAttempts, Reconciliation, Amount  string
	NeedsReview, ErrBadDate, ErrBadLimit                      string
	ErrBadStatus, ErrBadIntent, ErrBadTarget                  string

	// Audit.
	AuditTitle, AuditLead, AuditEmpty, ExportCSV, VerifyChain string
	ChainOKFmt, ChainBrokenFmt, ErrBadBefore                  string

	// Tokens.
	TokensTitle, TokensLead, NewToken, AgentName, Scopes, CreateToken string
	Valid, Revoked, Revoke, TokenCreatedTitle, TokenShownOnce         string
	TokenSaved, ErrAgentName, ErrScopes                               string

	// Users.
	UsersTitle, NewUser, Role, InitialPassword, AddUser, PasswordChanged string
	ChangeRole, Enable, Disable, Enabled, Disabled, NewPassword          string
	SetPassword, ErrUserName, ErrUserTaken, ErrPasswordRules, ErrRole    string
	ErrLastAdmin, ErrTokenGone                                           string
	// Granting the role that decides money: the admin's own password again.
	GrantPassword, YourPassword, OwnRoleNote, ErrOwnRole, ErrGrantPassword string
	ErrGrantPasswordWrong                                                  string

	// One's own password.
	OwnPasswordTitle, OwnPasswordRequired, CurrentPassword, RepeatPassword  string
	ChangePassword, ErrPasswordsDiffer, ErrPasswordSame, ErrCurrentPassword string
	ErrMustChangePassword                                                   string

	// Sign-in and errors.
	ErrBadCredentials, ErrThrottledFmt, ErrLoginExpired, ErrLoginBusy string
	ErrForbidden, ErrNotFound, ErrInternal, ErrBadRequest             string
	ErrCSRF, ErrTitle, ErrMethod                                      string

	// Units of durations: days, hours, minutes; under a minute.
	Day, Hour, Minute, UnderMinute, Ago string

	// Names for people.
	Statuses map[string]string // operation statuses
	// Finals says who ended a failed_final operation: "target" (refused
	// it), "person" (denied it, or confirmed a duplicate), "expired" (no
	// one approved it in time).
	Finals   map[string]string
	Roles    map[string]string
	Intents  map[string]string
	Targets  map[string]string // target systems by the gateway's names
	Events   map[string]string // audit event names
	ScopeFor map[string]string // what each agent token scope allows
	Flashes  map[string]string // messages after a redirect, by code; %s is its argument
	Approval map[string]string // approval states
	Errors   map[string]string // operations' error codes (docs/api.md, Error codes)

	More
	Finish
	Records
	Cards
	ProcessTexts
	WebhookTexts
	EventTexts
	PeopleTexts
}

// LabelsFor returns the texts of lang: "en" or, for anything else, Russian.
func LabelsFor(lang string) *Labels {
	if lang == "en" {
		return &english
	}
	return &russian
}

// StatusLabel is the name of an operation status for people.
func (l *Labels) StatusLabel(s string) string { return orRaw(l.Statuses, s) }

// OutcomeLabel is an operation's status for people, a failed_final one
// told apart by who ended it: the target, a person, or the approval's
// time running out (its error code says which).
func (l *Labels) OutcomeLabel(status, code string) string {
	if status != "failed_final" {
		return l.StatusLabel(status)
	}
	switch code {
	case "APPROVAL_DENIED", "DUPLICATE_CONFIRMED":
		return orRaw(l.Finals, "person")
	case "APPROVAL_EXPIRED":
		return orRaw(l.Finals, "expired")
	}
	return orRaw(l.Finals, "target")
}

// RoleLabel is the name of a role for people.
func (l *Labels) RoleLabel(r string) string { return orRaw(l.Roles, r) }

// IntentLabel is the name of an intent for people.
func (l *Labels) IntentLabel(i string) string { return orRaw(l.Intents, i) }

// TargetLabel is the name of a target system for people.
func (l *Labels) TargetLabel(t string) string { return orRaw(l.Targets, t) }

// EventLabel is the name of an audit event for people.
func (l *Labels) EventLabel(e string) string { return orRaw(l.Events, e) }

// ApprovalLabel is the name of an approval state for people.
func (l *Labels) ApprovalLabel(s string) string { return orRaw(l.Approval, s) }

// ErrorText is an operation's error for people: the text of its stable
// code in this language, or, for a code without one, the message
// journaled with it (the API's English), or the code itself. Pages show
// the code beside it: operators search by it.
func (l *Labels) ErrorText(code, message string) string {
	if v, ok := l.Errors[code]; ok {
		return v
	}
	if message != "" {
		return message
	}
	return code
}

// ApprovalStateLabel is an approval's state for people, told by what
// became of its operation: an approval the executor took says whether the
// operation then succeeded, not just that it ran.
func (l *Labels) ApprovalStateLabel(approval, opStatus string) string {
	if approval != "consumed" {
		return l.ApprovalLabel(approval)
	}
	if opStatus == "succeeded" {
		return l.ApprovedSucceeded
	}
	return fmt.Sprintf(l.ApprovedRunFmt, l.StatusLabel(opStatus))
}

func orRaw(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return k
}
