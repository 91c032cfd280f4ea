package adapters

import "github.com/oncegate/oncegate/adapters/redact"

// Secretive is a target that holds credentials (a user and password, a
// secret key, a webhook URL): it names them, so that every output of the
// gateway masks them in every form they may take (Redactor).
type Secretive interface {
	Secrets() []redact.Secret
}

// Redactor is the one redaction of the secrets the targets hold, and of
// credential patterns in general, for every output: the log, the
// journal's failure details, the admin pages, oncegate check.
func Redactor(targets map[string]Target) *redact.Redactor {
	var secrets []redact.Secret
	for _, t := range targets {
		if s, ok := t.(Secretive); ok {
			secrets = append(secrets, s.Secrets()...)
		}
	}
	return redact.New(secrets...)
}
