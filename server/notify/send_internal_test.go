package notify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http/httptest"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/config"
)

// selfSigned is a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sim mail"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// The e-mail goes over STARTTLS when the server offers it, and over TLS
// from the first byte for smtps://, signing in only once encrypted; a
// server whose certificate is not trusted gets nothing.
func TestEmailTLS(t *testing.T) {
	t.Parallel()
	srvTLS, pool := selfSigned(t)
	from, _ := mail.ParseAddress("oncegate@firm.example")
	for _, c := range []struct {
		name     string
		implicit bool
	}{{"STARTTLS", false}, {"Implicit", true}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := sim.StartSMTP("127.0.0.1:0", sim.SMTPOptions{User: "notices", Password: "mail-pass-123", TLS: srvTLS, ImplicitTLS: c.implicit})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			host, port, _ := net.SplitHostPort(m.Addr())
			e := &emailSender{server: config.SMTP{Host: host, Port: port, User: "notices", Password: "mail-pass-123", ImplicitTLS: c.implicit},
				from: from, timeout: 5 * time.Second}
			// Not trusted: refused before a word of the message or the password.
			if err := e.send(context.Background(), "anna@firm.example", message{Subject: "s", Text: "t"}); err == nil || !strings.Contains(err.Error(), "TLS") {
				t.Fatalf("an untrusted certificate: %v", err)
			}
			e.tls = &tls.Config{RootCAs: pool}
			if err := e.send(context.Background(), "anna@firm.example", message{Subject: "Ждёт", Text: "текст"}); err != nil {
				t.Fatal(err)
			}
			got := m.Messages()
			if len(got) != 1 || !got[0].TLS || !got[0].AuthTLS || got[0].Subject != "Ждёт" || strings.TrimSpace(got[0].Body) != "текст" {
				t.Fatalf("messages %+v", got)
			}
		})
	}
}

// A text longer than the Bot API takes is cut to fit and sent, not
// refused on every try.
func TestTelegramLongTextCut(t *testing.T) {
	t.Parallel()
	bot := sim.NewTelegram("1:token-of-the-long-text-test")
	hs := httptest.NewServer(bot)
	defer hs.Close()
	ts := &telegramSender{base: hs.URL, token: "1:token-of-the-long-text-test", client: hs.Client()}
	if err := ts.send(context.Background(), "1001", message{Text: strings.Repeat("ж", 5000)}); err != nil {
		t.Fatal(err)
	}
	if got := bot.Messages(); len(got) != 1 || len([]rune(got[0].Text)) != 4096 || !strings.HasSuffix(got[0].Text, "…") {
		t.Fatalf("sent %d messages", len(got))
	}
}
