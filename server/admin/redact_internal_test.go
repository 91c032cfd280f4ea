package admin

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/redact"
)

// Audit details journaled before the targets' secrets were masked are
// shown masked: the target's words as a target's text, the gateway's own
// names as they are.
func TestShownDetail(t *testing.T) {
	t.Parallel()
	h := &Handler{d: Deps{Redactor: redact.New(redact.Basic("admin", "Pa55-w0rd!"), redact.Name("admin"))}}
	basic := base64.StdEncoding.EncodeToString([]byte("admin:Pa55-w0rd!"))
	for _, c := range []struct{ in, want string }{
		{`{"code":"X","target_detail":"403: user admin, Basic ` + basic + `, pw Pa55-w0rd!"}`, `{"code":"X","target_detail":"403: user ***, Basic ***, pw ***"}`},
		{`{"name":"admin","role":"admin"}`, `{"name":"admin","role":"admin"}`},
		{`{"list":["Pa55-w0rd!"],"n":12345678901234567890}`, `{"list":["***"],"n":12345678901234567890}`},
		{`not json Pa55-w0rd!`, `not json ***`},
		{``, ``},
	} {
		if got := h.shownDetail([]byte(c.in)); got != c.want {
			t.Errorf("shownDetail(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := (&Handler{}).shownDetail([]byte(`{"target_detail":"Bearer abcdefghijklmnop"}`)); strings.Contains(got, "abcdefghijklmnop") {
		t.Errorf("without a redactor the patterns still mask: %s", got)
	}
}
