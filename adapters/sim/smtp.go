package sim

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SMTPSim is a mail server for notices: it takes mail over SMTP (AUTH
// PLAIN when it was given a user, STARTTLS when it was given a
// certificate) and keeps every message, shown under the simulators' HTTP
// at /_sim/mail (MountSMTP). Down makes it refuse the next connections,
// as a server being restarted does.
type SMTPSim struct {
	srv            *smtp.Server
	ln             net.Listener
	user, password string // the only credentials taken; none when user is ""

	mu   sync.Mutex
	mail []Mail
	down int
}

// Mail is one message the SMTP simulator took.
type Mail struct {
	From    string   `json:"from"`
	To      []string `json:"to"`
	Subject string   `json:"subject"` // decoded
	Body    string   `json:"body"`    // decoded text
	Raw     string   `json:"raw"`     // as it came over the wire
	// TLS: the message, and the credentials before it, came over TLS.
	TLS bool `json:"tls"`
	// AuthTLS: the client signed in (AUTH) over TLS; false when it signed
	// in over plain text or not at all.
	AuthTLS bool      `json:"auth_tls"`
	At      time.Time `json:"at"`
}

// SMTPOptions is how StartSMTP's server takes mail.
type SMTPOptions struct {
	// User and Password, when set, are the only credentials it takes, and
	// it takes no mail without them.
	User, Password string
	// TLS, when set, makes it offer STARTTLS with this certificate.
	TLS *tls.Config
	// ImplicitTLS makes it speak TLS from the first byte (smtps://), with
	// TLS's certificate.
	ImplicitTLS bool
}

// StartSMTP serves an SMTP simulator on addr ("127.0.0.1:0" picks a port).
func StartSMTP(addr string, o SMTPOptions) (*SMTPSim, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if o.ImplicitTLS {
		if o.TLS == nil {
			ln.Close()
			return nil, errors.New("implicit TLS needs a certificate (SMTPOptions.TLS)")
		}
		ln = tls.NewListener(ln, o.TLS)
	}
	m := &SMTPSim{ln: ln, user: o.User, password: o.Password}
	m.srv = smtp.NewServer(m)
	m.srv.Domain = "sim.oncegate.local"
	if !o.ImplicitTLS {
		m.srv.TLSConfig = o.TLS
	}
	// Credentials over plain text on loopback: the simulator's and the
	// client's own tests, never a real server.
	m.srv.AllowInsecureAuth = true
	m.srv.ReadTimeout, m.srv.WriteTimeout = 10*time.Second, 10*time.Second
	m.srv.MaxMessageBytes = 1 << 20
	go m.srv.Serve(downListener{ln, m})
	return m, nil
}

// downListener greets each connection that comes while the simulator is
// down with 421 and closes it, as a mail server going down does.
type downListener struct {
	net.Listener
	m *SMTPSim
}

// Accept implements net.Listener.
func (l downListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.m.mu.Lock()
		down := l.m.down > 0
		if down {
			l.m.down--
		}
		l.m.mu.Unlock()
		if !down {
			return c, nil
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(c, "421 4.3.2 Service not available, closing transmission channel\r\n")
		c.Close()
	}
}

// Addr is where the simulator listens, host:port.
func (m *SMTPSim) Addr() string { return m.ln.Addr().String() }

// Close stops the simulator.
func (m *SMTPSim) Close() error { return m.srv.Close() }

// Down makes the simulator greet the next n connections with 421 and
// close them, then take mail again.
func (m *SMTPSim) Down(n int) {
	m.mu.Lock()
	m.down = n
	m.mu.Unlock()
}

// Messages are the messages taken so far, oldest first.
func (m *SMTPSim) Messages() []Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Mail(nil), m.mail...)
}

// Reset forgets the messages and the fault.
func (m *SMTPSim) Reset() {
	m.mu.Lock()
	m.mail, m.down = nil, 0
	m.mu.Unlock()
}

// NewSession implements smtp.Backend.
func (m *SMTPSim) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{m: m, c: c}, nil
}

// smtpSession is one client's session.
type smtpSession struct {
	m        *SMTPSim
	c        *smtp.Conn
	authed   bool
	authTLS  bool
	from     string
	to       []string
	username string
}

// AuthMechanisms implements smtp.AuthSession.
func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

// Auth implements smtp.AuthSession.
func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if s.m.user == "" || user != s.m.user || password != s.m.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		_, isTLS := s.c.TLSConnectionState()
		s.authed, s.username, s.authTLS = true, user, isTLS
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.m.user != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if _, err := mail.ParseAddress(to); err != nil {
		return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.c.TLSConnectionState()
	msg := Mail{From: s.from, To: append([]string(nil), s.to...), Raw: string(raw), At: time.Now(), TLS: isTLS, AuthTLS: s.authTLS}
	if parsed, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		msg.Subject, _ = new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
		body, _ := io.ReadAll(parsed.Body)
		switch strings.ToLower(parsed.Header.Get("Content-Transfer-Encoding")) {
		case "quoted-printable":
			body, _ = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		case "base64":
			body, _ = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(body)), ""))
		}
		msg.Body = string(body)
	}
	s.m.mu.Lock()
	s.m.mail = append(s.m.mail, msg)
	s.m.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

// MountSMTP serves m's messages under the simulators' control API: GET
// /_sim/mail lists them, POST /_sim/mail/down?times=N takes the server
// down for the next N sessions; /_sim/reset forgets them.
func (s *Server) MountSMTP(m *SMTPSim) {
	s.Handle("GET /_sim/mail", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"messages": m.Messages()})
	})
	s.Handle("POST /_sim/mail/down", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("times"))
		if err != nil || n < 0 {
			WriteJSON(w, http.StatusBadRequest, map[string]any{"error": errors.New("times must be a count").Error()})
			return
		}
		m.Down(n)
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	s.OnReset(m.Reset)
}
