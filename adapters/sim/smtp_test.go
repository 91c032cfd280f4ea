package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// The SMTP simulator takes mail only with its credentials, keeps each
// message decoded, refuses the sessions it is down for, and shows what it
// took under the simulators' control API.
func TestSMTPSim(t *testing.T) {
	t.Parallel()
	m, err := sim.StartSMTP("127.0.0.1:0", sim.SMTPOptions{User: "notices", Password: "mail-pass-123"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	msg := "From: oncegate@firm.example\r\nTo: anna@firm.example\r\nSubject: =?utf-8?q?=D0=96=D0=B4=D1=91=D1=82?=\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=D0=96=D0=B4=D1=91=D1=82 approval\r\n"
	send := func(password string) error {
		return smtp.SendMail(m.Addr(), smtp.PlainAuth("", "notices", password, "127.0.0.1"), "oncegate@firm.example", []string{"anna@firm.example"}, []byte(msg))
	}
	if err := send("wrong-password"); err == nil || !strings.Contains(err.Error(), "535") {
		t.Fatalf("wrong password: %v, want 535", err)
	}
	m.Down(1)
	if err := send("mail-pass-123"); err == nil || !strings.Contains(err.Error(), "421") {
		t.Fatalf("while down: %v, want 421", err)
	}
	if err := send("mail-pass-123"); err != nil {
		t.Fatalf("once up again: %v", err)
	}
	got := m.Messages()
	if len(got) != 1 || got[0].Subject != "Ждёт" || !strings.HasPrefix(got[0].Body, "Ждёт approval") || got[0].To[0] != "anna@firm.example" {
		t.Fatalf("messages %+v", got)
	}

	s := sim.New()
	s.MountSMTP(m)
	hs := httptest.NewServer(s)
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/_sim/mail")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Messages []sim.Mail }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Messages) != 1 || list.Messages[0].Subject != "Ждёт" {
		t.Fatalf("GET /_sim/mail: %+v, %v", list, err)
	}
	if resp, err := http.Post(hs.URL+"/_sim/mail/down?times=1", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /_sim/mail/down: %v", err)
	}
	if err := send("mail-pass-123"); err == nil {
		t.Fatal("taken while taken down over the control API")
	}
}
