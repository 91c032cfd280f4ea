package engine

import (
	"strings"

	"github.com/oncegate/oncegate/adapters/redact"
)

// maxDetail is the longest detail kept of what a target said.
const maxDetail = 2000

// detail is what a target said in err, for the log and the journal's
// failure detail (and so the audit trail, the admin pages and their CSV):
// redacted as text from outside by the one redaction of the targets'
// secrets (adapters.Redactor), then cut short. Host names and stack
// frames are kept for operators: they are not secrets, and they never
// reach agents anyway.
func (e *Engine) detail(err error) string {
	s := e.redact.Foreign(errText(err))
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	return s
}

// Redactor is the redaction of the targets' secrets the engine applies,
// for the other outputs that show what a target said.
func (e *Engine) Redactor() *redact.Redactor { return e.redact }
